package repo

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/formats/formattest"
	"github.com/chunkvc/chunkvc/formats/tiff"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/store"
)

// cogCase is a corpus COG and two of its tiles, each with a block of its own.
type cogCase struct {
	data   []byte
	k1, k2 formats.Segment
}

func findCOG(t *testing.T) cogCase {
	t.Helper()
	for _, f := range formattest.Corpus(t, ".tif", ".tiff") {
		l, err := formattest.Layout(tiff.Adapter{}, f.Data)
		if err != nil || l.Format != "tiff" || len(l.Aliases) > 0 {
			continue
		}
		var segs []formats.Segment
		for _, s := range l.Segments {
			if s.IsChunk() && strings.HasPrefix(s.Key, "z0/") && !strings.Contains(s.Key, "@") {
				segs = append(segs, s)
			}
		}
		if len(segs) >= 4 {
			return cogCase{f.Data, segs[0], segs[len(segs)-1]}
		}
	}
	t.Fatal("no corpus COG with 4 full-resolution tiles")
	return cogCase{}
}

// spliceBytes is data with the block at seg replaced by nb.
func spliceBytes(t *testing.T, data []byte, seg formats.Segment, nb []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if _, err := tiff.Splice(&out, bytes.NewReader(data), int64(len(data)), []tiff.Replacement{{Off: seg.Off, Src: bytes.NewReader(nb), N: int64(len(nb))}}); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// cogMerge commits a corpus COG, their version (tile k2 replaced) and our
// version (tile k1 replaced), and returns the repository and the three
// manifest texts, written to files for the driver.
func cogMerge(t *testing.T, c cogCase) (r *Repo, files [3]string, theirTile []byte) {
	t.Helper()
	t.Setenv("GIT_AUTHOR_NAME", "Test")
	t.Setenv("GIT_AUTHOR_EMAIL", "test@example.com")
	var err error
	if r, err = Init(t.TempDir(), "", Adapters{tiff.Adapter{}}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Track([]string{"*.tif"}); err != nil {
		t.Fatal(err)
	}
	ourTile := bytes.Repeat([]byte("our new tile "), 40)
	theirTile = bytes.Repeat([]byte("their tile, longer than ours "), 50)
	dir := t.TempDir()
	for i, data := range [][]byte{c.data, spliceBytes(t, c.data, c.k2, theirTile), spliceBytes(t, c.data, c.k1, ourTile)} {
		if err := os.WriteFile(filepath.Join(r.Root, "dem.tif"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Commit(context.Background(), CommitOptions{Message: "v"}); err != nil {
			t.Fatal(err)
		}
		text, err := os.ReadFile(filepath.Join(r.Root, ManifestDir, "dem.tif"))
		if err != nil {
			t.Fatal(err)
		}
		files[[]int{0, 2, 1}[i]] = filepath.Join(dir, []string{"O", "B", "A"}[i])
		if err := os.WriteFile(files[[]int{0, 2, 1}[i]], text, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return r, files, theirTile
}

// Their tile is spliced into our COG: the result manifest lists our tile
// and theirs, and describes the file now in the work tree.
func TestMergeDriverSplicesCOG(t *testing.T) {
	c := findCOG(t)
	r, files, theirTile := cogMerge(t, c)
	res, err := r.MergeDriver(context.Background(), files[0], files[1], files[2], ManifestDir+"/dem.tif")
	if err != nil || res.Outcome != MergedChunks || res.FromTheirs != 1 {
		t.Fatalf("merge: %+v, %v", res, err)
	}
	text, err := os.ReadFile(files[1])
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Decode(text)
	if err != nil {
		t.Fatalf("merged manifest: %v\n%s", err, text)
	}
	work, err := os.ReadFile(filepath.Join(r.Root, "dem.tif"))
	if err != nil {
		t.Fatal(err)
	}
	if hashing.Sum(work) != m.Digest || int64(len(work)) != m.Size {
		t.Fatal("the merged manifest does not describe the working file")
	}
	for _, ch := range m.Chunks {
		if ch.Key == c.k2.Key && ch.ID != hashing.Sum(theirTile) {
			t.Fatalf("tile %s is not theirs", ch.Key)
		}
	}
	if !bytes.Contains(work, theirTile) || !bytes.Contains(work, bytes.Repeat([]byte("our new tile "), 40)) {
		t.Fatal("the merged file lacks a side's tile")
	}
}

// A merge that fails half-way (their tile gone from the store) records
// a conflict saying so, never our manifest alone, and leaves our file.
func TestMergeDriverFailureIsConflict(t *testing.T) {
	c := findCOG(t)
	r, files, theirTile := cogMerge(t, c)
	before, err := os.ReadFile(filepath.Join(r.Root, "dem.tif"))
	if err != nil {
		t.Fatal(err)
	}
	rm, ok := r.Store.(store.Remover)
	if !ok {
		t.Fatalf("store %T removes nothing", r.Store)
	}
	if err := rm.Delete(context.Background(), hashing.Sum(theirTile)); err != nil {
		t.Fatal(err)
	}
	res, err := r.MergeDriver(context.Background(), files[0], files[1], files[2], ManifestDir+"/dem.tif")
	if err == nil || res == nil || res.Outcome != MergedConflict {
		t.Fatalf("merge without their tile: %+v, %v", res, err)
	}
	if text, _ := os.ReadFile(files[1]); !strings.Contains(string(text), "the merge failed") {
		t.Fatalf("result:\n%s", text)
	}
	if now, err := os.ReadFile(filepath.Join(r.Root, "dem.tif")); err != nil || !bytes.Equal(now, before) {
		t.Fatal("a failed merge changed the working file")
	}
}

// The skeleton reader gives a file's inline bytes and zeros for its
// chunks, in one read or many, and its Skeleton is the file's.
func TestSkeletonReader(t *testing.T) {
	c := findCOG(t)
	r, _, _ := cogMerge(t, c)
	m, err := r.Manifest("HEAD~2", "dem.tif")
	if err != nil {
		t.Fatal(err)
	}
	lay, err := r.layoutFor(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Clone(c.data)
	var off int64
	for _, pc := range lay.All() {
		if !pc.IsInline() {
			clear(want[off : off+pc.Len])
		}
		off += pc.Len
	}
	sr := newSkeletonReader(lay)
	got := make([]byte, len(want))
	if n, err := sr.ReadAt(got, 0); n != len(got) || err != nil || !bytes.Equal(got, want) {
		t.Fatalf("whole read: %d bytes, %v, equal %v", n, err, bytes.Equal(got, want))
	}
	for _, at := range []int64{0, 1, 7, int64(len(want)) / 3, int64(len(want)) - 5} {
		b := make([]byte, 13)
		n, err := sr.ReadAt(b, at)
		if end := min(at+13, int64(len(want))); !bytes.Equal(b[:n], want[at:end]) || (end-at == 13) != (err == nil) {
			t.Fatalf("read at %d: %d bytes, %v", at, n, err)
		}
	}
	k1, err1 := tiff.Skeleton(sr, m.Size)
	k2, err2 := tiff.Skeleton(bytes.NewReader(c.data), int64(len(c.data)))
	if err1 != nil || err2 != nil || k1 != k2 {
		t.Fatalf("skeleton from the layout differs from the file's (%v, %v)", err1, err2)
	}
}
