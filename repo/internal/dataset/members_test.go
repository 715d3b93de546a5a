package dataset

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
)

// memberBytes assembles e's bytes from its layout and c's chunks.
func memberBytes(t *testing.T, c committed, e Entry) []byte {
	t.Helper()
	var out []byte
	for _, pc := range e.Layout.All() {
		if !pc.Chunk {
			out = append(out, pc.Inline...)
			continue
		}
		b, err := c.fetch(pc.ID)
		if err != nil {
			t.Fatalf("%s: %v", e.Path, err)
		}
		out = append(out, b...)
	}
	return out
}

// storeSize is the sum of the sizes of the files under dir.
func storeSize(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	for _, p := range files(t, dir) {
		fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(p)))
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

// lookupAll requires every file of dir to be found, with its bytes, and
// Check to give the digest Encode gave.
func lookupAll(t *testing.T, dir string) (*Members, committed) {
	t.Helper()
	_, c := commit(t, dir)
	ms, err := Index(c.layout, c.chunks)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range files(t, dir) {
		e, err := ms.Lookup(p)
		if err != nil {
			t.Fatalf("lookup %s: %v", p, err)
		}
		want, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
		if err != nil {
			t.Fatal(err)
		}
		if got := memberBytes(t, c, e); !bytes.Equal(got, want) || e.Size != int64(len(want)) {
			t.Fatalf("%s: %d bytes (size %d), want %d", p, len(got), e.Size, len(want))
		}
		if e.Key != "" && e.ID != hashing.Sum(want) {
			t.Fatalf("%s: chunk file ID %s is not its bytes' hash", p, e.ID.Short())
		}
	}
	digest, err := ms.Check(storeSize(t, dir))
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	if digest != c.digest {
		t.Fatalf("check gives digest %s, commit %s", digest.Short(), c.digest.Short())
	}
	return ms, c
}

// Every file of every corpus store, of a sharded store and of a store
// with large and odd files is found by its path, with its bytes; the
// member table checks out with the commit's digest.
func TestLookupEveryMember(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join(formattest.CorpusDir(t), "zarr", "*.zarr"))
	n := 0
	for _, d := range dirs {
		if _, err := Build(d); err != nil {
			continue // not a store chunkvc tracks as a dataset
		}
		t.Run(filepath.Base(d), func(t *testing.T) { lookupAll(t, d) })
		n++
	}
	if n < 15 {
		t.Fatalf("only %d corpus stores looked up", n)
	}
	for _, atStart := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "s.zarr")
		writeSharded(t, dir, atStart)
		lookupAll(t, dir)
	}
}

// Paths that are no member (a missing chunk, outside the grid, a
// directory, a name no array has) are ErrNoMember.
func TestLookupNoMember(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m.zarr")
	if err := os.MkdirAll(filepath.Join(dir, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	meta := `{"zarr_format": 2, "shape": [4, 4], "chunks": [2, 2], "dtype": "|u1", "compressor": null,
 "fill_value": 0, "order": "C", "filters": null}`
	for name, data := range map[string]string{".zgroup": `{"zarr_format": 2}`, "a/.zarray": meta, "a/0.0": "ab", "a/1.1": "cd"} {
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(name)), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ms, _ := lookupAll(t, dir)
	for _, p := range []string{"a/0.1", "a/2.0", "a", "a/.zattrs", ".zmetadata", "b/0.0", "a/0/0", "a/00.0", "../a/0.0"} {
		if _, err := ms.Lookup(p); !errors.Is(err, ErrNoMember) {
			t.Errorf("lookup %s: %v, want ErrNoMember", p, err)
		}
	}
	chunks := ArrayChunks(ms.chunks, "a")
	if len(chunks) != 2 || chunks[0].Key != "a/c/0/0" || !ms.HasArray("a") || ms.HasArray("b") {
		t.Errorf("array a: %v", chunks)
	}
}

// Check refuses a member table that does not agree with the chunk lines
// or the size, and a lost chunk file line changes the digest.
func TestCheckRefuses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "big.zarr")
	writeBigStore(t, dir)
	_, c := commit(t, dir)
	size := storeSize(t, dir)
	check := func(chunks []manifest.Chunk, size int64) (hashing.ID, error) {
		ms, err := Index(c.layout, chunks)
		if err != nil {
			t.Fatal(err)
		}
		return ms.Check(size)
	}
	if d, err := check(c.chunks, size); err != nil || d != c.digest {
		t.Fatalf("intact: %v", err)
	}
	if _, err := check(c.chunks, size+1); err == nil {
		t.Error("a wrong size passed")
	}
	var noPiece, noFile, stray, resized []manifest.Chunk
	dropped := false
	for _, ch := range c.chunks {
		if ch.Key != "c/2" {
			noFile = append(noFile, ch)
		}
		if strings.HasPrefix(ch.Key, "c/0@") && !dropped {
			dropped = true // the first piece of chunk file 0
		} else {
			noPiece = append(noPiece, ch)
		}
		r := ch
		if len(resized) == 0 {
			r.Size++
		}
		resized = append(resized, r)
	}
	stray = append(slices.Clone(c.chunks), manifest.Chunk{Key: "zz/c/0", Size: 1, ID: hashing.Sum([]byte("z"))})
	if _, err := check(noPiece, size); err == nil {
		t.Error("a piece of a listed member missing from the chunk lines passed")
	}
	if _, err := check(resized, size+1); err == nil {
		t.Error("a piece listed at another size passed")
	}
	if _, err := check(stray, size+1); err == nil {
		t.Error("a chunk line of no array passed")
	}
	if d, err := check(noFile, size-1); err != nil || d == c.digest {
		t.Errorf("without chunk file 2: digest %s (commit %s), %v", d.Short(), c.digest.Short(), err)
	}
}

// writeBigStore writes a 1-D store with a chunk file cut in pieces, an
// empty one, a plain one and a file the format does not know.
func writeBigStore(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	meta := `{"zarr_format": 2, "shape": [3], "chunks": [1], "dtype": "|u1", "compressor": null,
 "fill_value": 0, "order": "C", "filters": null}`
	for name, data := range map[string][]byte{
		".zarray": []byte(meta), "0": bytes.Repeat([]byte("0123456789abcdef"), pieceLen/8+100), "1": nil, "2": []byte("x"), "README.txt": []byte("notes\n"),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
