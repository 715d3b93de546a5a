package dataset

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/chunkvc/chunkvc/formats/formattest"
	"github.com/chunkvc/chunkvc/formats/zarr"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
)

// committed is what a commit of a store keeps: the layout blob, the chunk
// lines, the digest and the chunks' bytes by ID.
type committed struct {
	layout []byte
	chunks []manifest.Chunk
	digest hashing.ID
	store  map[hashing.ID][]byte
}

// commit builds the plan of dir and hashes its chunks, as a commit would.
func commit(t *testing.T, dir string) (*Plan, committed) {
	t.Helper()
	p, err := Build(dir)
	if err != nil {
		t.Fatalf("build %s: %v", dir, err)
	}
	c := committed{store: map[hashing.ID][]byte{}}
	ids := p.ChunkLines()
	for i, s := range p.Chunks {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(s.Path)))
		if err != nil {
			t.Fatal(err)
		}
		b := data[s.Off : s.Off+s.Len]
		ids[i].ID = hashing.Sum(b)
		c.store[ids[i].ID] = b
	}
	if c.layout, c.chunks, c.digest, err = p.Encode(ids); err != nil {
		t.Fatalf("encode %s: %v", dir, err)
	}
	return p, c
}

func (c committed) version() Version { return Version{Layout: c.layout, Chunks: c.chunks} }

func (c committed) fetch(id hashing.ID) ([]byte, error) {
	if b, ok := c.store[id]; ok {
		return b, nil
	}
	return nil, fmt.Errorf("chunk %s not stored", id.Short())
}

// roundTrip commits dir, restores it elsewhere and requires the same
// files with the same bytes, and nothing else.
func roundTrip(t *testing.T, dir string) (*Plan, committed) {
	t.Helper()
	p, c := commit(t, dir)
	out := filepath.Join(t.TempDir(), "restored")
	if err := Restore(out, c.version(), c.fetch); err != nil {
		t.Fatalf("restore %s: %v", dir, err)
	}
	sameTree(t, dir, out)
	return p, c
}

// sameTree requires the regular files under a and b to be the same paths
// with the same bytes.
func sameTree(t *testing.T, a, b string) {
	t.Helper()
	fa, fb := files(t, a), files(t, b)
	if !slices.Equal(fa, fb) {
		t.Fatalf("%s: restored files differ:\n have %d %v\n want %d %v", a, len(fb), head(fb), len(fa), head(fa))
	}
	for _, p := range fa {
		da, _ := os.ReadFile(filepath.Join(a, p))
		db, _ := os.ReadFile(filepath.Join(b, p))
		if !bytes.Equal(da, db) {
			t.Fatalf("%s: %s restored with other bytes (%d vs %d)", a, p, len(db), len(da))
		}
	}
}

func head(s []string) []string { return s[:min(len(s), 8)] }

func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// Every corpus store that is a store (the zarrs test data) comes back
// byte for byte.
func TestCorpusStoresRoundTrip(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join(formattest.CorpusDir(t), "zarr", "*.zarr"))
	done := 0
	for _, d := range dirs {
		root, err := os.OpenRoot(d)
		if err != nil {
			t.Fatal(err)
		}
		isStore := zarr.Detect(root.FS())
		root.Close()
		if !isStore {
			continue // arrays under a folder with no root document
		}
		t.Run(filepath.Base(d), func(t *testing.T) { roundTrip(t, d) })
		done++
	}
	if done < 15 {
		t.Fatalf("only %d corpus stores round-tripped", done)
	}
}

const python = formattest.Python

const pythonStores = `
import os, sys
import numpy as np, pandas as pd, xarray as xr, zarr
out = sys.argv[1]
p = lambda n: os.path.join(out, n)
a = zarr.open(p("dot_c.zarr"), mode="w", shape=(10, 13), chunks=(4, 5), dtype="i4", order="C", dimension_separator=".")
a[:] = np.arange(130).reshape(10, 13)
a = zarr.open(p("slash_f.zarr"), mode="w", shape=(9, 7, 5), chunks=(2, 3, 5), dtype="f8", order="F", dimension_separator="/")
a[:] = np.random.default_rng(1).random((9, 7, 5))
root = zarr.open_group(p("groups.zarr"), mode="w")
root.create_group("a/b").create_dataset("x", shape=(6,), chunks=(4,), dtype="u2")[:] = 5
top = root.create_dataset("top", shape=(3, 3), chunks=(2, 2), dtype="i1", fill_value=7)
top[0, 0] = 1
zarr.consolidate_metadata(p("groups.zarr"))
def steps(t0, n):
    rng = np.random.default_rng(t0)
    return xr.Dataset({"t2m": (("time", "lat", "lon"), rng.random((n, 10, 12)).astype("f4"))},
        coords={"time": pd.date_range("2024-01-01", periods=n, freq="D") + pd.Timedelta(days=t0),
                "lat": np.linspace(50, 41, 10), "lon": np.linspace(0, 11, 12)})
steps(0, 3).to_zarr(p("cube.zarr"), mode="w", encoding={"t2m": {"chunks": (1, 4, 4)}})
steps(3, 2).to_zarr(p("cube.zarr"), append_dim="time")
`

// Stores zarr-python 2 and xarray write: both v2 separators, C and F
// order, nested groups, a missing chunk (fill value), consolidated
// metadata and an append along time.
func TestPythonStoresRoundTrip(t *testing.T) {
	formattest.RequirePython(t, "zarr", "xarray", "numcodecs")
	dir := t.TempDir()
	if out, err := exec.Command(python, "-c", pythonStores, dir).CombinedOutput(); err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	for _, name := range []string{"dot_c.zarr", "slash_f.zarr", "groups.zarr", "cube.zarr"} {
		t.Run(name, func(t *testing.T) { roundTrip(t, filepath.Join(dir, name)) })
	}
}

// A store GDAL writes (its own georeferencing arrays included).
func TestGDALStoreRoundTrip(t *testing.T) {
	formattest.RequireTool(t, "gdal_translate")
	formattest.RequireTool(t, "gdal_create")
	dir := t.TempDir()
	src := filepath.Join(dir, "src.tif")
	for _, args := range [][]string{
		{"gdal_create", "-of", "GTiff", "-outsize", "300", "200", "-bands", "2", "-ot", "Int16", "-burn", "7",
			"-a_srs", "EPSG:32633", "-a_ullr", "500000", "4620000", "503000", "4618000", src},
		{"gdal_translate", "-q", "-of", "Zarr", "-co", "FORMAT=ZARR_V2", "-co", "BLOCKSIZE=64,64",
			"-co", "COMPRESS=ZLIB", src, filepath.Join(dir, "g.zarr")},
	} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	p, _ := roundTrip(t, filepath.Join(dir, "g.zarr"))
	if len(p.Chunks) < 8 {
		t.Fatalf("GDAL store made %d chunks", len(p.Chunks))
	}
}

// writeSharded writes a v3 store with one sharded array (4×6 of uint8 in
// shards of 2×3 inner chunks of 1×1... as the spec lays them out): index
// at the end or start, with a crc32c, empty inner chunks, a gap.
func writeSharded(t *testing.T, dir string, atStart bool) {
	t.Helper()
	write := func(p string, b []byte) {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	loc := "end"
	if atStart {
		loc = "start"
	}
	write("zarr.json", []byte(`{"zarr_format": 3, "node_type": "group"}`))
	write("temp/zarr.json", fmt.Appendf(nil, `{"zarr_format": 3, "node_type": "array", "shape": [4, 6], "data_type": "uint8",
 "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 6]}},
 "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}}, "fill_value": 0,
 "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [1, 3],
   "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
   "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
   "index_location": %q}}]}`, loc))
	const entries = 4 // 2×2 inner chunks per shard
	for s := 0; s < 2; s++ {
		var body []byte
		index := make([]byte, 0, 16*entries+4)
		indexLen := 16*entries + 4
		base := 0
		if atStart {
			base = indexLen
		}
		for e := range entries {
			if (s+e)%3 == 2 { // empty: the fill value
				index = binary.LittleEndian.AppendUint64(index, ^uint64(0))
				index = binary.LittleEndian.AppendUint64(index, ^uint64(0))
				continue
			}
			chunk := bytes.Repeat([]byte{byte(10*s + e)}, 3)
			if e == 1 {
				body = append(body, 0xEE) // a byte no entry points at
			}
			index = binary.LittleEndian.AppendUint64(index, uint64(base+len(body)))
			index = binary.LittleEndian.AppendUint64(index, uint64(len(chunk)))
			body = append(body, chunk...)
		}
		index = binary.LittleEndian.AppendUint32(index, crc32.Checksum(index, crc32.MakeTable(crc32.Castagnoli)))
		shard := append(append([]byte{}, body...), index...)
		if atStart {
			shard = append(append([]byte{}, index...), body...)
		}
		write(fmt.Sprintf("temp/c/%d/0", s), shard)
	}
}

// A sharded v3 store: inner chunks are chunks of their own, keyed by
// their global coordinates, and the shard files come back byte for byte.
func TestShardedStoreRoundTrip(t *testing.T) {
	for _, atStart := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "s.zarr")
		writeSharded(t, dir, atStart)
		p, c := roundTrip(t, dir)
		var keys []string
		for _, ch := range c.chunks {
			keys = append(keys, ch.Key)
		}
		// Shard (s, 0) holds inner chunks (2s+e/2, e%2) unless (s+e)%3 == 2.
		want := []string{"temp/c/0/0", "temp/c/0/1", "temp/c/1/1", "temp/c/2/0", "temp/c/3/0", "temp/c/3/1"}
		if !slices.Equal(keys, want) {
			t.Errorf("index at start %v: chunk keys %v, want %v", atStart, keys, want)
		}
		shards := 0
		for _, m := range p.Listed {
			if m.Role == manifest.RoleShard {
				shards++
			}
		}
		if shards != 2 {
			t.Errorf("index at start %v: %d shard members, want 2", atStart, shards)
		}
	}
}

// An edit of one chunk file changes that chunk's line and the digest, and
// no other line, nor the layout blob.
func TestEditChangesOneChunk(t *testing.T) {
	formattest.RequirePython(t, "zarr", "numcodecs")
	dir := filepath.Join(t.TempDir(), "e.zarr")
	script := `import sys, numpy as np, zarr
a = zarr.open(sys.argv[1], mode="w", shape=(40, 40), chunks=(10, 10), dtype="f4")
a[:] = np.arange(1600, dtype="f4").reshape(40, 40)
if len(sys.argv) > 2:
    a[15, 25] = -1`
	run := func(args ...string) {
		if out, err := exec.Command(python, append([]string{"-c", script}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("python: %v\n%s", err, out)
		}
	}
	run(dir)
	_, before := commit(t, dir)
	run(dir, "edit")
	_, after := roundTrip(t, dir)
	if len(before.chunks) != 16 || len(after.chunks) != 16 {
		t.Fatalf("%d and %d chunks, want 16", len(before.chunks), len(after.chunks))
	}
	var changed []string
	for i := range before.chunks {
		if before.chunks[i] != after.chunks[i] {
			changed = append(changed, after.chunks[i].Key)
		}
	}
	if !slices.Equal(changed, []string{"c/1/2"}) {
		t.Errorf("changed chunk lines %v, want [c/1/2]", changed)
	}
	if !bytes.Equal(before.layout, after.layout) {
		t.Error("the layout blob changed with a chunk's bytes")
	}
	if before.digest == after.digest {
		t.Error("the digest did not change")
	}
}

// A chunk file larger than a chunk may be is cut into content-keyed
// pieces; an unknown file and an empty chunk file are kept as they are.
func TestLargeAndOddFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "big.zarr")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	meta := `{"zarr_format": 2, "shape": [3], "chunks": [1], "dtype": "|u1", "compressor": null,
 "fill_value": 0, "order": "C", "filters": null}`
	big := make([]byte, pieceLen*2+12345)
	rand.New(rand.NewSource(1)).Read(big)
	for name, data := range map[string][]byte{
		".zarray": []byte(meta), "0": big, "1": nil, "2": []byte("x"), "README.txt": []byte("notes\n"),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, c := roundTrip(t, dir)
	roles := map[string]manifest.Role{}
	for _, m := range p.Listed {
		roles[m.Path] = m.Role
	}
	want := map[string]manifest.Role{".zarray": manifest.RoleDocument, "0": manifest.RolePieces, "1": manifest.RoleOther, "README.txt": manifest.RoleOther}
	if fmt.Sprint(roles) != fmt.Sprint(want) {
		t.Errorf("listed members %v, want %v", roles, want)
	}
	pieces := 0
	for _, ch := range c.chunks {
		if strings.HasPrefix(ch.Key, "c/0@") {
			pieces++
		}
	}
	if pieces != 3 {
		t.Errorf("%d pieces of the big chunk file, want 3", pieces)
	}
}

// A symbolic link in a store is refused, naming it; Restore refuses a
// directory that is not empty and bytes that do not match their ID.
func TestRefusals(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "l.zarr")
	writeSharded(t, dir, false)
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "temp", "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := Build(dir); err == nil || !strings.Contains(err.Error(), "temp/link") {
		t.Fatalf("a store with a link: %v", err)
	}
	os.Remove(filepath.Join(dir, "temp", "link"))
	_, c := commit(t, dir)
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Restore(full, c.version(), c.fetch); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("restore into a full directory: %v", err)
	}
	lying := func(id hashing.ID) ([]byte, error) {
		b, err := c.fetch(id)
		return append([]byte{b[0] ^ 1}, b[1:]...), err
	}
	if err := Restore(filepath.Join(t.TempDir(), "r"), c.version(), lying); err == nil || !strings.Contains(err.Error(), "do not match") {
		t.Fatalf("restore from a lying store: %v", err)
	}
}

// copyTree copies the regular files under src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	for _, p := range files(t, src) {
		data, err := os.ReadFile(filepath.Join(src, p))
		if err != nil {
			t.Fatal(err)
		}
		full := filepath.Join(dst, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Update moves a store between versions writing only what differs:
// forward over an edit and an append (new chunks, new metadata), back
// again (the appended chunks removed), and
// refuses a file neither version has unless told to remove it.
func TestUpdateBetweenVersions(t *testing.T) {
	formattest.RequirePython(t, "zarr", "xarray", "numcodecs")
	dir := t.TempDir()
	src := filepath.Join(dir, "cube.zarr")
	script := `import sys, numpy as np, pandas as pd, xarray as xr
def steps(t0, n):
    rng = np.random.default_rng(t0)
    return xr.Dataset({"t2m": (("time", "lat", "lon"), rng.random((n, 8, 8)).astype("f4"))},
        coords={"time": pd.date_range("2024-01-01", periods=n, freq="D") + pd.Timedelta(days=t0)})
if sys.argv[2] == "v1":
    steps(0, 4).to_zarr(sys.argv[1], mode="w", encoding={"t2m": {"chunks": (1, 4, 4)}})
else:
    steps(4, 2).to_zarr(sys.argv[1], append_dim="time")`
	run := func(step string) {
		if out, err := exec.Command(python, "-c", script, src, step).CombinedOutput(); err != nil {
			t.Fatalf("python: %v\n%s", err, out)
		}
	}
	run("v1")
	v1dir := filepath.Join(dir, "v1")
	copyTree(t, src, v1dir)
	_, c1 := commit(t, src)
	run("v2")
	_, c2 := commit(t, src)
	fetch := func(id hashing.ID) ([]byte, error) {
		if b, ok := c1.store[id]; ok {
			return b, nil
		}
		return c2.fetch(id)
	}
	work := filepath.Join(dir, "work")
	if err := Restore(work, c1.version(), fetch); err != nil {
		t.Fatal(err)
	}
	n, err := Update(work, c1.version(), c2.version(), fetch, false)
	if err != nil {
		t.Fatal(err)
	}
	sameTree(t, src, work)
	// 2 time steps × 4 chunks of t2m, time's new chunk(s) and metadata:
	// far fewer than the store's files.
	if all := len(files(t, src)); n == 0 || n >= all/2 {
		t.Errorf("forward update wrote %d of %d files", n, all)
	}
	if _, err := Update(work, c2.version(), c1.version(), fetch, false); err != nil {
		t.Fatal(err)
	}
	sameTree(t, v1dir, work)
	if err := os.WriteFile(filepath.Join(work, "t2m", "stray"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Update(work, c1.version(), c2.version(), fetch, false); !errors.Is(err, ErrExtra) || !strings.Contains(err.Error(), "t2m/stray") {
		t.Fatalf("update over a stray file: %v", err)
	}
	if _, err := Update(work, c1.version(), c2.version(), fetch, true); err != nil {
		t.Fatal(err)
	}
	sameTree(t, src, work)
}

// A stamp changes when a file is rewritten, added, removed or renamed,
// and not when nothing happened.
func TestStamp(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s.zarr")
	writeSharded(t, dir, false)
	a, err := StampOf(dir)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := StampOf(dir); b != a {
		t.Fatal("stamp of an untouched store changed")
	}
	if a.Files != len(files(t, dir)) {
		t.Fatalf("stamp counts %d files, store has %d", a.Files, len(files(t, dir)))
	}
	steps := []func(){
		func() { _ = os.WriteFile(filepath.Join(dir, "temp", "c", "0", "0"), []byte("rewritten"), 0o644) },
		func() { _ = os.WriteFile(filepath.Join(dir, "extra"), nil, 0o644) },
		func() { _ = os.Rename(filepath.Join(dir, "extra"), filepath.Join(dir, "extra2")) },
		func() { _ = os.Remove(filepath.Join(dir, "extra2")) },
	}
	prev := a
	for i, step := range steps {
		step()
		s, err := StampOf(dir)
		if err != nil {
			t.Fatal(err)
		}
		if s.Sum == prev.Sum {
			t.Errorf("step %d: stamp did not change", i)
		}
		prev = s
	}
	if err := os.WriteFile(filepath.Join(dir, "x"+tmpMark+"1"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if s, _ := StampOf(dir); s.Sum != prev.Sum {
		t.Error("a temporary file of Update changed the stamp")
	}
}

// BuildSized plans a store exactly as Build does, whatever room it is
// told to make (none, too little, too much), and makes that room.
func TestBuildSizedSamePlan(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join(formattest.CorpusDir(t), "zarr", "*.zarr"))
	checked := 0
	for _, d := range dirs {
		want, err := Build(d)
		if err != nil {
			continue // not a store Build reads; TestCorpusStoresRoundTrip says why
		}
		for _, n := range []int{0, 1, len(want.Files) * 3} {
			got, err := BuildSized(d, n)
			if err != nil {
				t.Fatalf("%s: BuildSized %d: %v", d, n, err)
			}
			if !reflect.DeepEqual(got.Files, want.Files) || !reflect.DeepEqual(got.Chunks, want.Chunks) || !reflect.DeepEqual(got.Listed, want.Listed) {
				t.Fatalf("%s: BuildSized %d plans differently", d, n)
			}
			if cap(got.Files) < n {
				t.Errorf("%s: room for %d files, asked %d", d, cap(got.Files), n)
			}
		}
		checked++
	}
	if checked < 10 {
		t.Fatalf("only %d corpus stores checked", checked)
	}
}

// A commit drops the plan's sources (where each chunk lies) once its
// chunks are read, before it makes the manifest: Encode must not need
// them, and gives the same layout, lines and digest without.
func TestEncodeWithoutSources(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s.zarr")
	writeSharded(t, dir, false)
	p, c := commit(t, dir)
	lines := p.ChunkLines()
	for i := range lines {
		lines[i].ID = c.chunks[slices.IndexFunc(c.chunks, func(x manifest.Chunk) bool { return x.Key == lines[i].Key })].ID
	}
	p.Chunks = nil
	layout, chunks, digest, err := p.Encode(lines)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(layout, c.layout) || !slices.Equal(chunks, c.chunks) || digest != c.digest {
		t.Fatal("encoded without sources, the dataset differs")
	}
}

// A store of a million small chunk files holds a PlanFile per file for
// the whole commit: 64 bytes (and its path), where it took 80.
func TestPlanFileSize(t *testing.T) {
	if n := unsafe.Sizeof(PlanFile{}); n > 64 {
		t.Fatalf("PlanFile takes %d bytes, want at most 64", n)
	}
}
