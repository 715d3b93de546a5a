package zarr

import (
	"bytes"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/chunkvc/chunkvc/formats"
)

// shardWord is what manifest.checkShardName accepts of one word.
var shardWord = regexp.MustCompile(`^[a-z0-9_.-]+$`)

// checkStore scans the store at dir and checks, against the file system
// read independently, that every file is listed once and in WalkDir order,
// that metadata documents carry their bytes, that each chunk path round
// trips through its coordinates, that chunk keys are valid and round trip,
// and that each shard's index is valid and derivable. It returns the scan.
func checkStore(t *testing.T, dir string) (*Store, []File) {
	t.Helper()
	st, files, err := ScanDir(dir)
	if err != nil {
		t.Fatalf("scan %s: %v", dir, err)
	}
	var want []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		want = append(want, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, len(files))
	for i, f := range files {
		got[i] = f.Path
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s: scan lists\n%q\nthe directory holds\n%q", dir, got, want)
	}
	_, again, err := ScanDir(dir)
	if err != nil || len(again) != len(files) {
		t.Fatalf("%s: second scan: %d files, %v", dir, len(again), err)
	}
	for i := range files {
		checkFile(t, dir, &files[i])
		if again[i].Path != files[i].Path || again[i].Role != files[i].Role || !slices.Equal(again[i].Coords, files[i].Coords) {
			t.Errorf("%s: scans differ at %d: %+v, %+v", dir, i, files[i], again[i])
		}
	}
	checkSummary(t, st)
	return st, files
}

func checkFile(t *testing.T, dir string, f *File) {
	t.Helper()
	full := filepath.Join(dir, filepath.FromSlash(f.Path))
	switch f.Role {
	case RoleMeta:
		data, err := os.ReadFile(full)
		if err != nil || !bytes.Equal(data, f.Data) {
			t.Errorf("%s: metadata bytes differ from the file's (%v)", f.Path, err)
		}
	case RoleChunk, RoleShard:
		if f.Array == nil {
			t.Fatalf("%s: %s without an array", f.Path, f.Role)
		}
		p, err := f.Array.ChunkFile(f.Coords)
		if err != nil || p != f.Path {
			t.Errorf("%s: coords %v format back to %q (%v)", f.Path, f.Coords, p, err)
		}
		if f.Role == RoleChunk {
			checkKey(t, f.Array, f.Coords)
		} else {
			checkShardFile(t, full, f)
		}
	case RoleOther:
		if f.Reason == "" {
			t.Errorf("%s: other without a reason", f.Path)
		}
	default:
		t.Errorf("%s: role %v", f.Path, f.Role)
	}
}

// checkKey checks the chunkvc key of coords: valid, parsed back to the
// array's prefix and coords, and given a valid shard name.
func checkKey(t *testing.T, a *Array, coords []int64) string {
	t.Helper()
	k, err := a.ChunkKey(coords)
	if err != nil {
		t.Fatalf("array %q: key of %v: %v", a.Path, coords, err)
	}
	if err := formats.CheckKey(k); err != nil {
		t.Errorf("array %q: %v", a.Path, err)
	}
	prefix, back, ok := ParseKey(k)
	if !ok || prefix != KeyPrefix(a.Path) || !slices.Equal(back, coords) {
		t.Errorf("key %q parses to %q %v %v; want %q %v", k, prefix, back, ok, KeyPrefix(a.Path), coords)
	}
	if s := (Sharder{}).Shard(k); !shardWord.MatchString(path.Base(s)) || len(s) > formats.MaxKeyLen+8 {
		t.Errorf("key %q: shard name %q", k, s)
	}
	return k
}

// checkShardFile reads a shard's index, checks that its pieces cover the
// file, that the index re-encodes to its own bytes, and keys its inner
// chunks.
func checkShardFile(t *testing.T, full string, f *File) *ShardIndex {
	t.Helper()
	data, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	s := f.Array.Sharding
	x, err := s.ReadIndex(f.Path, bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("%s: %v", f.Path, err)
	}
	enc, err := s.EncodeIndex(x.Chunks)
	if err != nil || !bytes.Equal(enc, data[x.Off:x.Off+x.Len]) {
		t.Errorf("%s: index not derivable from its entries (%v)", f.Path, err)
	}
	var pos int64
	for _, p := range x.Pieces(int64(len(data))) {
		if p.Off != pos || p.Len <= 0 {
			t.Fatalf("%s: piece %+v at %d", f.Path, p, pos)
		}
		pos += p.Len
	}
	if pos != int64(len(data)) {
		t.Errorf("%s: pieces end at %d of %d", f.Path, pos, len(data))
	}
	for _, c := range x.Chunks {
		checkKey(t, f.Array, s.GlobalCoords(f.Coords, c.Coords))
	}
	return x
}

// roles counts files by role.
func roles(files []File) map[Role]int {
	n := map[Role]int{}
	for _, f := range files {
		n[f.Role]++
	}
	return n
}

// others lists the RoleOther files with their reasons.
func others(files []File) []string {
	var out []string
	for _, f := range files {
		if f.Role == RoleOther {
			out = append(out, f.Path+": "+f.Reason)
		}
	}
	return out
}
