package diff

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats/zarr"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"

	"github.com/chunkvc/chunkvc/formats/formattest"
)

// zarrEdits makes, with zarr-python 2 and xarray, five states of one
// store: s0 8 days of t2m (time, lat, lon) = (8, 10, 12) in 1×4×4 chunks;
// s1 t2m[2:4, 0:4, 4:8] overwritten; s2 days 8 and 9 appended along time;
// s3 t2m re-chunked 2×5×6; s4 (from s2) t2m re-compressed with zlib, a new
// array d2m (one chunk), the lat array removed.
const zarrEdits = `
import os, shutil, sys
import numpy as np, pandas as pd, xarray as xr, zarr, numcodecs
out = sys.argv[1]
p = lambda n: os.path.join(out, n)
def steps(t0, n):
    rng = np.random.default_rng(t0 + 1)
    return xr.Dataset(
        {"t2m": (("time", "lat", "lon"), rng.random((n, 10, 12)).astype("f4"))},
        coords={"time": pd.date_range("2024-01-01", periods=n, freq="D") + pd.Timedelta(days=t0),
                "lat": np.linspace(50, 41, 10), "lon": np.linspace(0, 11, 12)})
steps(0, 8).to_zarr(p("s0"), mode="w", encoding={"t2m": {"chunks": (1, 4, 4)}})
shutil.copytree(p("s0"), p("s1"))
a = zarr.open(p("s1"), mode="r+")["t2m"]
a[2:4, 0:4, 4:8] = np.full((2, 4, 4), -5, dtype="f4")
shutil.copytree(p("s1"), p("s2"))
steps(8, 2).to_zarr(p("s2"), append_dim="time")
ds = xr.open_zarr(p("s2")).load()
del ds["t2m"].encoding["chunks"]
ds.to_zarr(p("s3"), mode="w", encoding={"t2m": {"chunks": (2, 5, 6)}})
ds = xr.open_zarr(p("s2")).load()
ds["d2m"] = ds["t2m"] - 2
ds.to_zarr(p("s4"), mode="w", encoding={"t2m": {"chunks": (1, 4, 4), "compressor": numcodecs.Zlib(level=1)}})
shutil.rmtree(p("s4/lat"))
`

// requirePythonZarr skips the test when zarr-python or xarray is missing,
// and fails it under CI=true, where scripts/ensure-deps.sh installs them.
func requirePythonZarr(t *testing.T) {
	t.Helper()
	formattest.RequirePython(t, "zarr", "xarray", "numcodecs")
}

// storeManifest builds the manifest a dataset commit would hold for the
// store at dir: one chunk line per chunk file (its chunkvc key, size and
// BLAKE3 of its bytes) and the store's summary, checked by Encode.
func storeManifest(t *testing.T, dir string) *manifest.Manifest {
	t.Helper()
	st, files, err := zarr.ScanDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := &manifest.Manifest{Path: "cube.zarr", Format: zarr.Format, FormatVersion: 1}
	for _, f := range zarr.Summary(st) {
		m.Summary = append(m.Summary, manifest.Field{Name: f.Name, Value: f.Value})
	}
	for _, f := range files {
		m.Size += f.Size
		if f.Role != zarr.RoleChunk {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.Path)))
		if err != nil {
			t.Fatal(err)
		}
		key, err := f.Array.ChunkKey(f.Coords)
		if err != nil {
			t.Fatal(err)
		}
		m.Chunks = append(m.Chunks, manifest.Chunk{Key: key, Size: int64(len(data)), ID: hashing.Sum(data)})
	}
	if m.Chunks, err = manifest.Normalize(m.Chunks); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Encode(); err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	return m
}

// zarrArray finds the entry of array p, nil when absent.
func zarrArray(fd FileDiff, p string) *ZarrArray {
	if fd.Zarr == nil {
		return nil
	}
	for i := range fd.Zarr.Arrays {
		if fd.Zarr.Arrays[i].Array == p {
			return &fd.Zarr.Arrays[i]
		}
	}
	return nil
}

func arrayNames(fd FileDiff) []string {
	var out []string
	for _, a := range fd.Zarr.Arrays {
		out = append(out, a.Array+":"+string(a.Change))
	}
	return out
}

// TestZarrDiffPythonEdits diffs manifests of a store before and after
// edits zarr-python and xarray made, and checks every figure against what
// the edit did.
func TestZarrDiffPythonEdits(t *testing.T) {
	requirePythonZarr(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "edit.py")
	if err := os.WriteFile(script, []byte(zarrEdits), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("/usr/bin/python3", script, dir).CombinedOutput(); err != nil {
		t.Fatalf("python edits: %v\n%s", err, out)
	}
	var m [5]*manifest.Manifest
	for i := range m {
		m[i] = storeManifest(t, filepath.Join(dir, "s"+string(rune('0'+i))))
	}

	if fd := Compare(m[0], m[0]); fd.Zarr == nil || len(fd.Zarr.Arrays) != 0 || len(fd.Warnings) != 0 {
		t.Errorf("no change: %+v, warnings %q", fd.Zarr, fd.Warnings)
	}

	// s0 → s1: two chunks of t2m rewritten in place.
	fd := Compare(m[0], m[1])
	if got := arrayNames(fd); !slices.Equal(got, []string{"t2m:changed"}) || len(fd.Warnings) != 0 || len(fd.SummaryChanges) != 0 {
		t.Fatalf("s0→s1 arrays %q warnings %q summary %+v", got, fd.Warnings, fd.SummaryChanges)
	}
	want := ZarrArray{Array: "t2m", Change: ChunkChanged, Total: 72, Stored: 72, Changed: 2,
		ShapeOld: []int64{8, 10, 12}, ShapeNew: []int64{8, 10, 12}, Dims: []ZarrDimRange{
			{Dim: 0, Name: "time", Chunks: [2]int64{2, 3}, Elements: [2]int64{2, 3}},
			{Dim: 1, Name: "lat", Chunks: [2]int64{0, 0}, Elements: [2]int64{0, 3}},
			{Dim: 2, Name: "lon", Chunks: [2]int64{1, 1}, Elements: [2]int64{4, 7}}}}
	if got := *zarrArray(fd, "t2m"); !reflect.DeepEqual(got, want) {
		t.Errorf("s0→s1 t2m\n got %+v\nwant %+v", got, want)
	}
	if got := want.Line(); got != "t2m: 2 of 72 chunks changed, time 2..3, lat 0..3, lon 4..7" {
		t.Errorf("s0→s1 line %q", got)
	}

	// s1 → s2: two days appended along time.
	fd = Compare(m[1], m[2])
	if got := arrayNames(fd); !slices.Equal(got, []string{"t2m:changed", "time:changed"}) || len(fd.Warnings) != 0 {
		t.Fatalf("s1→s2 arrays %q warnings %q", got, fd.Warnings)
	}
	want = ZarrArray{Array: "t2m", Change: ChunkChanged, Total: 90, Stored: 90, Added: 18,
		ShapeOld: []int64{8, 10, 12}, ShapeNew: []int64{10, 10, 12}, Dims: []ZarrDimRange{
			{Dim: 0, Name: "time", Chunks: [2]int64{8, 9}, Elements: [2]int64{8, 9}, Appended: true},
			{Dim: 1, Name: "lat", Chunks: [2]int64{0, 2}, Elements: [2]int64{0, 9}},
			{Dim: 2, Name: "lon", Chunks: [2]int64{0, 2}, Elements: [2]int64{0, 11}}}}
	if got := *zarrArray(fd, "t2m"); !reflect.DeepEqual(got, want) {
		t.Errorf("s1→s2 t2m\n got %+v\nwant %+v", got, want)
	}
	if got := want.Line(); got != "t2m: 18 of 90 chunks changed (18 added), time 8..9 appended" {
		t.Errorf("s1→s2 line %q", got)
	}
	// time is one 8-element chunk; the append adds a second, partial one.
	tm := zarrArray(fd, "time")
	if tm.Added != 1 || tm.Total != 2 || len(tm.Dims) != 1 || !tm.Dims[0].Appended || tm.Dims[0].Elements != [2]int64{8, 9} {
		t.Errorf("s1→s2 time %+v", tm)
	}
	var changed []string
	for _, c := range fd.SummaryChanges {
		w, _, _ := strings.Cut(c.New, " ")
		changed = append(changed, c.Name+" "+w)
	}
	if !slices.Equal(changed, []string{"array t2m", "array time"}) {
		t.Errorf("s1→s2 summary changes %+v", fd.SummaryChanges)
	}

	// s2 → s3: t2m re-chunked; the other arrays' chunks are unchanged.
	fd = Compare(m[2], m[3])
	t2m := zarrArray(fd, "t2m")
	if t2m == nil || t2m.Total != 20 || t2m.Added+t2m.Changed != 20 || t2m.Removed+t2m.Changed != 90 || t2m.Dims != nil ||
		!slices.Equal(t2m.Drift, []string{"chunks 1x4x4 → 2x5x6"}) {
		t.Errorf("s2→s3 t2m %+v", t2m)
	}
	if !slices.Contains(fd.Warnings, "t2m re-chunked (chunks 1x4x4 → 2x5x6): every chunk changed") {
		t.Errorf("s2→s3 warnings %q", fd.Warnings)
	}

	// s2 → s4: t2m re-compressed, d2m added, lat removed.
	fd = Compare(m[2], m[4])
	if got := arrayNames(fd); !slices.Equal(got, []string{"d2m:added", "lat:removed", "t2m:changed"}) {
		t.Fatalf("s2→s4 arrays %q", got)
	}
	t2m = zarrArray(fd, "t2m")
	if t2m.Changed != 90 || t2m.Added+t2m.Removed != 0 || len(t2m.Dims) != 3 || t2m.Dims[0].Chunks != [2]int64{0, 9} ||
		!slices.Equal(t2m.Drift, []string{"codecs blosc/lz4/shuffle → zlib"}) {
		t.Errorf("s2→s4 t2m %+v", t2m)
	}
	if !slices.Equal(fd.Warnings, []string{"t2m re-encoded (codecs blosc/lz4/shuffle → zlib): every chunk changed"}) {
		t.Errorf("s2→s4 warnings %q", fd.Warnings)
	}
	if d2m := zarrArray(fd, "d2m"); d2m.Added != 1 || d2m.Total != 1 || d2m.Stored != 1 || d2m.ShapeOld != nil || d2m.Dims[0].Elements != [2]int64{0, 9} {
		t.Errorf("s2→s4 d2m %+v", d2m)
	}
	if lat := zarrArray(fd, "lat"); lat.Removed != 1 || lat.Total != 1 || lat.Stored != 1 || lat.ShapeNew != nil {
		t.Errorf("s2→s4 lat %+v", lat)
	}
	var lines []string
	for _, a := range fd.Zarr.Arrays {
		lines = append(lines, a.Line())
	}
	if want := []string{"d2m: added, 1 of 1 chunks stored", "lat: removed, 1 chunks stored",
		"t2m: 90 of 90 chunks changed; codecs blosc/lz4/shuffle → zlib"}; !slices.Equal(lines, want) {
		t.Errorf("s2→s4 lines\n%q\nwant\n%q", lines, want)
	}
	big := ZarrArray{Array: "t2m", Change: ChunkChanged, Total: 16000, Changed: 5, ShapeNew: []int64{373, 721},
		Dims: []ZarrDimRange{{Dim: 0, Name: "time", Elements: [2]int64{365, 372}, Appended: true}, {Dim: 1, Elements: [2]int64{0, 720}}}}
	if got := big.Line(); got != "t2m: 5 of 16,000 chunks changed, time 365..372 appended" {
		t.Errorf("line %q", got)
	}
	if js, err := json.Marshal(fd.Zarr.Arrays[0]); err != nil || !strings.Contains(string(js), `"shape_new":[10,10,12]`) {
		t.Errorf("json %s %v", js, err)
	}
}

// zarrManifest is a dataset manifest with the given array summary values
// and chunk keys, each chunk's content named by its key and seed.
func zarrManifest(t *testing.T, arrays []string, seeds map[string]string) *manifest.Manifest {
	t.Helper()
	m := &manifest.Manifest{Path: "cube.zarr", Format: zarr.Format, FormatVersion: 1,
		Summary: []manifest.Field{{Name: "zarr", Value: "3"}}}
	for _, a := range arrays {
		m.Summary = append(m.Summary, manifest.Field{Name: "array", Value: a})
	}
	for k, seed := range seeds {
		m.Chunks = append(m.Chunks, manifest.Chunk{Key: k, Size: 10, ID: hashing.Sum([]byte(k + seed))})
	}
	var err error
	if m.Chunks, err = manifest.Normalize(m.Chunks); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestZarrDiffGrids covers what the edited stores do not: a sharded
// array's inner grid past the shape's edge, a chunk cut into pieces, an
// append that rewrites the old edge chunk, and growth that is not an
// append.
func TestZarrDiffGrids(t *testing.T) {
	const v1 = `temp dtype=uint8 shape=6x12 chunks=4x8 inner=2x4 dims=time,x order=C codecs=sharding[bytes/le] fill=0`
	const v2 = `temp dtype=uint8 shape=10x12 chunks=4x8 inner=2x4 dims=time,x order=C codecs=sharding[bytes/le] fill=0`
	old := zarrManifest(t, []string{v1}, map[string]string{
		"temp/c/0/0": "", "temp/c/1/0": "", "temp/c/2/0@1": "", "temp/c/2/0@2": "", "temp/c/2/3": "",
	})
	// Rows 6..9 appended: inner rows 3 and 4 are new, row 2 held the old
	// edge (rows 4..5 of 6) and is rewritten only if partial; here the
	// inner chunk side 2 divides 6, so row 2 is untouched.
	cur := zarrManifest(t, []string{v2}, map[string]string{
		"temp/c/0/0": "", "temp/c/1/0": "", "temp/c/2/0@1": "", "temp/c/2/0@2": "", "temp/c/2/3": "",
		"temp/c/3/0": "", "temp/c/3/1": "", "temp/c/4/2@1": "", "temp/c/4/2@2": "",
	})
	fd := Compare(old, cur)
	a := zarrArray(fd, "temp")
	want := ZarrArray{Array: "temp", Change: ChunkChanged, Total: 15, Stored: 7, Added: 3,
		ShapeOld: []int64{6, 12}, ShapeNew: []int64{10, 12}, Dims: []ZarrDimRange{
			{Dim: 0, Name: "time", Chunks: [2]int64{3, 4}, Elements: [2]int64{6, 9}, Appended: true},
			{Dim: 1, Name: "x", Chunks: [2]int64{0, 2}, Elements: [2]int64{0, 11}}}}
	if a == nil || !reflect.DeepEqual(*a, want) {
		t.Fatalf("append\n got %+v\nwant %+v", a, want)
	}
	if !slices.Equal(fd.SummaryChanges, []FieldChange{{Name: "array", Old: v1, New: v2}}) {
		t.Errorf("summary changes %+v", fd.SummaryChanges)
	}

	// One piece of a cut chunk changes: the chunk counts once; a change
	// below the old edge makes the growth no append.
	cur.Chunks[slices.IndexFunc(cur.Chunks, func(c manifest.Chunk) bool { return c.Key == "temp/c/2/0@2" })].ID = hashing.Sum([]byte("edited"))
	fd = Compare(old, cur)
	if a := zarrArray(fd, "temp"); a.Changed != 1 || a.Added != 3 || a.Dims[0].Appended || a.Dims[0].Chunks != [2]int64{2, 4} {
		t.Errorf("edit and growth %+v", a)
	}

	// An append whose old edge chunk was partial: inner side 4 along time,
	// old shape 6 (edge chunk 1 holds rows 4..5), new 10.
	const p1 = `/ dtype=i2 shape=6 chunks=4 dims=time order=C codecs=zstd fill=0`
	const p2 = `/ dtype=i2 shape=10 chunks=4 dims=time order=C codecs=zstd fill=0`
	old = zarrManifest(t, []string{p1}, map[string]string{"c/0": "", "c/1": ""})
	cur = zarrManifest(t, []string{p2}, map[string]string{"c/0": "", "c/1": "more", "c/2": ""})
	fd = Compare(old, cur)
	want = ZarrArray{Array: "", Change: ChunkChanged, Total: 3, Stored: 3, Added: 1, Changed: 1,
		ShapeOld: []int64{6}, ShapeNew: []int64{10}, Dims: []ZarrDimRange{
			{Dim: 0, Name: "time", Chunks: [2]int64{1, 2}, Elements: [2]int64{4, 9}, Appended: true}}}
	if a := zarrArray(fd, ""); a == nil || !reflect.DeepEqual(*a, want) {
		t.Errorf("partial-edge append\n got %+v\nwant %+v", a, want)
	}

	// An array removed before another that changed: its summary field is
	// paired with nothing, not with the next array's.
	const q = `q dtype=i2 shape=4 chunks=4 order=C codecs=zstd fill=0`
	old = zarrManifest(t, []string{p1, q}, map[string]string{"c/0": "", "q/c/0": ""})
	cur = zarrManifest(t, []string{strings.Replace(q, "fill=0", "fill=1", 1)}, map[string]string{"q/c/0": "x"})
	fd = Compare(old, cur)
	wantChanges := []FieldChange{{Name: "array", Old: p1, New: ""}, {Name: "array", Old: q, New: strings.Replace(q, "fill=0", "fill=1", 1)}}
	if !reflect.DeepEqual(fd.SummaryChanges, wantChanges) {
		t.Errorf("summary changes %+v", fd.SummaryChanges)
	}
	if got := arrayNames(fd); !slices.Equal(got, []string{":removed", "q:changed"}) ||
		!slices.Equal(fd.Warnings, []string{"q re-encoded (fill 0 → 1): every chunk changed"}) {
		t.Errorf("arrays %q warnings %q", got, fd.Warnings)
	}
}
