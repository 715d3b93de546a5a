package zarr

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
)

// python is Debian's interpreter, which has python3-zarr and xarray.
const python = formattest.Python

// requirePythonZarr skips the test when zarr-python or xarray is missing,
// and fails it under CI=true, where scripts/ensure-deps.sh installs them.
func requirePythonZarr(t *testing.T) {
	t.Helper()
	formattest.RequirePython(t, "zarr", "xarray", "numcodecs")
}

// pythonWriter writes stores with zarr-python 2 and xarray, then reports,
// from zarr-python's own API, every array's grid and the key and
// coordinates of each chunk it finds in the store.
const pythonWriter = `
import itertools, json, os, sys
import numpy as np, pandas as pd, xarray as xr, zarr

out = sys.argv[1]
p = lambda n: os.path.join(out, n)

a = zarr.open(p("dot_c.zarr"), mode="w", shape=(10, 13), chunks=(4, 5), dtype="i4", order="C", dimension_separator=".")
a[:] = np.arange(130).reshape(10, 13)
a = zarr.open(p("slash_f.zarr"), mode="w", shape=(9, 7, 5), chunks=(2, 3, 5), dtype="f8", order="F", dimension_separator="/")
a[:] = np.random.default_rng(1).random((9, 7, 5))

root = zarr.open_group(p("groups.zarr"), mode="w")
x = root.create_group("a/b").create_dataset("x", shape=(6,), chunks=(4,), dtype="u2")
x[:] = 5
top = root.create_dataset("top", shape=(3, 3), chunks=(2, 2), dtype="i1", fill_value=7)
top[0, 0] = 1  # only chunk 0.0 is written
s = root.create_dataset("scalar", shape=(), dtype="f4")
s[...] = 1.5
root.attrs["title"] = "groups"
zarr.consolidate_metadata(p("groups.zarr"))

def steps(t0, n):
    rng = np.random.default_rng(t0)
    return xr.Dataset(
        {"t2m": (("time", "lat", "lon"), rng.random((n, 10, 12)).astype("f4"))},
        coords={"time": pd.date_range("2024-01-01", periods=n, freq="D") + pd.Timedelta(days=t0),
                "lat": np.linspace(50, 41, 10), "lon": np.linspace(0, 11, 12)})
steps(0, 3).to_zarr(p("cube.zarr"), mode="w", encoding={"t2m": {"chunks": (1, 4, 4)}})
steps(3, 2).to_zarr(p("cube.zarr"), append_dim="time")

report = {}
for name in ["dot_c.zarr", "slash_f.zarr", "groups.zarr", "cube.zarr"]:
    g = zarr.open(p(name), mode="r")
    arrays = [g] if isinstance(g, zarr.Array) else [a for _, a in g.arrays(recurse=True)]
    rep = []
    for a in arrays:
        keys = []
        for c in itertools.product(*[range(n) for n in a.cdata_shape]):
            k = a._chunk_key(c)
            if k in a.store:
                keys.append([k, list(c)])
        rep.append({"path": a.path, "shape": list(a.shape), "chunks": list(a.chunks), "order": a.order, "keys": keys})
    report[name] = rep
json.dump(report, sys.stdout)
`

type pyArray struct {
	Path   string               `json:"path"`
	Shape  []int64              `json:"shape"`
	Chunks []int64              `json:"chunks"`
	Order  string               `json:"order"`
	Keys   [][2]json.RawMessage `json:"keys"`
}

// TestPythonStores scans stores written by zarr-python 2 and xarray (both
// separators, C and F order, nested groups, a scalar, a partly written
// array, consolidated metadata, an append along time): every file is
// understood, and each array's grid and chunk files are exactly those
// zarr-python itself reports.
func TestPythonStores(t *testing.T) {
	requirePythonZarr(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "write.py")
	if err := os.WriteFile(script, []byte(pythonWriter), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, script, dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python writer: %v", err)
	}
	var report map[string][]pyArray
	if err := json.Unmarshal(out, &report); err != nil {
		t.Fatalf("python report: %v\n%s", err, out)
	}
	if len(report) != 4 {
		t.Fatalf("report of %d stores", len(report))
	}
	for name, arrays := range report {
		t.Run(name, func(t *testing.T) {
			st, files := checkStore(t, filepath.Join(dir, name))
			if o := others(files); len(o) > 0 || st.Unsupported != "" {
				t.Errorf("not understood: %q %q", o, st.Unsupported)
			}
			for _, pa := range arrays {
				checkPyArray(t, st, files, pa)
			}
			checkConsolidated(t, files, name != "dot_c.zarr" && name != "slash_f.zarr")
		})
	}
	st, _ := checkStore(t, filepath.Join(dir, "cube.zarr"))
	for _, n := range st.Nodes {
		if n.Path == "t2m" && (n.Array.Shape[0] != 5 || !slices.Equal(n.Array.DimNames, []string{"time", "lat", "lon"})) {
			t.Errorf("t2m after the append: shape %v dims %q", n.Array.Shape, n.Array.DimNames)
		}
	}
}

func checkPyArray(t *testing.T, st *Store, files []File, pa pyArray) {
	t.Helper()
	var a *Array
	for _, n := range st.Nodes {
		if n.Path == pa.Path && n.Array != nil {
			a = n.Array
		}
	}
	if a == nil {
		t.Fatalf("array %q not found by the scan", pa.Path)
	}
	if !slices.Equal(a.Shape, pa.Shape) || !slices.Equal(a.ChunkShape, pa.Chunks) || string(a.Order) != pa.Order {
		t.Errorf("array %q: %v %v %c; zarr-python: %v %v %s", pa.Path, a.Shape, a.ChunkShape, a.Order, pa.Shape, pa.Chunks, pa.Order)
	}
	var want, got []string
	for _, k := range pa.Keys {
		var key string
		var coords []int64
		if json.Unmarshal(k[0], &key) != nil || json.Unmarshal(k[1], &coords) != nil {
			t.Fatalf("report entry %s", k)
		}
		if len(pa.Shape) == 0 {
			coords = nil // zarr-python walks a scalar's grid as if it were (1,)
		}
		want = append(want, key+" "+fmtCoords(coords))
	}
	for _, f := range files {
		if f.Role == RoleChunk && f.Array == a {
			got = append(got, f.Path+" "+fmtCoords(f.Coords))
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) || len(want) == 0 {
		t.Errorf("array %q chunks:\n got %q\nwant %q", pa.Path, got, want)
	}
}

// checkConsolidated checks that .zmetadata, when the store has one, names
// exactly the metadata documents the scan found beside it.
func checkConsolidated(t *testing.T, files []File, want bool) {
	t.Helper()
	var docs []string
	var consolidated map[string]json.RawMessage
	for _, f := range files {
		switch {
		case f.Path == ZMetadata:
			var err error
			if consolidated, err = ParseZMetadata(f.Path, f.Data); err != nil {
				t.Fatal(err)
			}
		case f.Role == RoleMeta:
			docs = append(docs, f.Path)
		}
	}
	if (consolidated != nil) != want {
		t.Fatalf("consolidated metadata: %v, want %v", consolidated != nil, want)
	}
	if consolidated == nil {
		return
	}
	var keys []string
	for k := range consolidated {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	slices.Sort(docs)
	if !slices.Equal(keys, docs) {
		t.Errorf(".zmetadata names %q, the store holds %q", keys, docs)
	}
}

func fmtCoords(c []int64) string {
	b, _ := json.Marshal(c)
	return strings.ReplaceAll(string(b), "null", "[]")
}
