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
	out, err := exec.Command("/usr/bin/python3", "-c", "import zarr, xarray, numcodecs").CombinedOutput()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("zarr-python and xarray are required under CI=true: %v\n%s", err, out)
	}
	t.Skipf("zarr-python or xarray not installed: %v", err)
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
	if js, err := json.Marshal(fd.Zarr.Arrays[0]); err != nil || !strings.Contains(string(js), `"shape_new":[10,10,12]`) {
		t.Errorf("json %s %v", js, err)
	}
}
