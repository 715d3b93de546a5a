package main

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
)

// xarrayCube writes (or, with appendSteps, appends time steps to) a CF
// cube with xarray's to_zarr, as the data-cube teams of issue 28 do.
func xarrayCube(t *testing.T, r *runner, py string, appendSteps int) {
	t.Helper()
	script := `
import sys, numpy as np, pandas as pd, xarray as xr
path, steps = sys.argv[1], int(sys.argv[2])
start = 0 if steps == 0 else 10
n = 10 if steps == 0 else steps
rng = np.random.default_rng(start)
ds = xr.Dataset(
    {"t2m": (("time", "lat", "lon"), rng.random((n, 32, 64), dtype="f4"))},
    coords={"time": pd.date_range("2020-01-01", periods=start + n)[start:],
            "lat": np.linspace(89.5, 58.5, 32), "lon": np.linspace(0.5, 63.5, 64)},
)
enc = {"t2m": {"chunks": (1, 16, 16)}} if steps == 0 else None
if steps == 0:
    ds.to_zarr(path, mode="w", encoding=enc)
else:
    ds.to_zarr(path, append_dim="time")
`
	cmd := exec.Command(py, "-c", script, r.path("cube.zarr"), strconv.Itoa(appendSteps))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("xarray: %v\n%s", err, out)
	}
}

// An xarray cube is tracked as one dataset; an append of time steps with
// to_zarr(append_dim="time") is reviewed as an append along time, in
// status, diff and the commit's JSON, and costs Git a few shards.
func TestZarrDatasetAppendReview(t *testing.T) {
	py := formattest.RequirePython(t, "xarray", "zarr", "pandas")
	r := newRunner(t)
	r.git("init", "-q")
	r.cv("init")
	xarrayCube(t, r, py, 0)
	var tr struct {
		Datasets []string `json:"datasets"`
		Added    []string `json:"added"`
	}
	r.jsonOf(&tr, "track", "cube.zarr")
	if len(tr.Datasets) != 1 || tr.Datasets[0] != "cube.zarr" {
		t.Fatalf("track: %+v", tr)
	}
	var c1 struct {
		Files []struct {
			Path, Status, Format string
			Chunks               int
		} `json:"files"`
	}
	r.jsonOf(&c1, "commit", "-m", "cube")
	// 10 time steps × 2 × 4 chunks of t2m, plus the coordinate arrays.
	if len(c1.Files) != 1 || c1.Files[0].Path != "cube.zarr" || c1.Files[0].Format != "zarr" || c1.Files[0].Chunks < 80 {
		t.Fatalf("commit: %+v", c1.Files)
	}
	xarrayCube(t, r, py, 2)
	var st struct {
		Files []struct {
			Path, Status string
			Arrays       []struct {
				Array   string `json:"array"`
				Added   int    `json:"added"`
				Changed int    `json:"changed"`
				Dims    []struct {
					Name     string   `json:"name"`
					Elements [2]int64 `json:"elements"`
					Appended bool     `json:"appended"`
					Dates    []string `json:"dates"`
				} `json:"dims"`
			} `json:"arrays"`
		} `json:"files"`
	}
	r.jsonOf(&st, "status")
	if len(st.Files) != 1 || st.Files[0].Status != "modified" {
		t.Fatalf("status after the append: %+v", st.Files)
	}
	found := false
	for _, a := range st.Files[0].Arrays {
		if a.Array != "t2m" {
			continue
		}
		found = true
		if a.Added != 2*2*4 || len(a.Dims) == 0 || a.Dims[0].Name != "time" || !a.Dims[0].Appended || a.Dims[0].Elements != [2]int64{10, 11} ||
			strings.Join(a.Dims[0].Dates, " ") != "2020-01-11 2020-01-12" {
			t.Errorf("status of t2m after the append: %+v", a)
		}
	}
	if !found {
		t.Fatalf("status names no t2m: %+v", st.Files[0].Arrays)
	}
	r.cv("commit", "-m", "append")
	text := r.cv("diff", "HEAD~1", "HEAD")
	if !strings.Contains(text, "t2m: 16 of 96 chunks changed (+16 -0 ~0); shape 10x32x64 → 12x32x64; time 10..11 appended (2020-01-11..2020-01-12)") {
		t.Errorf("diff of the append:\n%s", text)
	}
	// Git: the root, the time array's shard and t2m's shard of the new
	// steps (blocks of 4×8×8 chunks); the metadata is in the layout blob,
	// in the store, not in Git.
	changed := strings.Fields(r.git("diff", "--name-only", "HEAD~1", "HEAD"))
	if len(changed) > 6 {
		t.Errorf("an append of 2 time steps changed %d files in Git: %v", len(changed), changed)
	}
	for _, p := range changed {
		if !strings.HasPrefix(p, ".chunkvc/") {
			t.Errorf("the append changed %s in Git", p)
		}
	}
}
