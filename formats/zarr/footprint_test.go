package zarr

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
	"github.com/chunkvc/chunkvc/geom"
)

func nearBox(a, b geom.BBox) bool {
	n := func(x, y float64) bool { return math.Abs(x-y) <= 1e-9*math.Max(1, math.Abs(y)) }
	return n(a.MinX, b.MinX) && n(a.MinY, b.MinY) && n(a.MaxX, b.MaxX) && n(a.MaxY, b.MaxY)
}

// TestFootprintsGDAL: every chunk of a store GDAL's Zarr driver wrote
// from a UTM GeoTIFF gets the footprint of its pixels by gdalinfo's
// geotransform, through the store's own X/Y coordinate arrays (decoded
// from zstd and blosc), and the store's CRS is the GeoTIFF's.
func TestFootprintsGDAL(t *testing.T) {
	dir := t.TempDir()
	src := gdalSource(t, dir)
	var info struct {
		GeoTransform []float64 `json:"geoTransform"`
		Size         []int64   `json:"size"`
	}
	if err := json.Unmarshal([]byte(formattest.Run1(t, "gdalinfo", "-json", src)), &info); err != nil {
		t.Fatal(err)
	}
	gt, w, h := info.GeoTransform, info.Size[0], info.Size[1]
	for _, comp := range []string{"ZSTD", "BLOSC"} {
		t.Run(comp, func(t *testing.T) {
			out := filepath.Join(dir, comp+".zarr")
			formattest.Run1(t, "gdal_translate", "-q", "-of", "Zarr", "-co", "FORMAT=ZARR_V2",
				"-co", "BLOCKSIZE=16,32", "-co", "COMPRESS="+comp, src, out)
			st, files := checkStore(t, out)
			fp := Locate(os.DirFS(out), st)
			if fp.CRS != "EPSG:32631" || len(fp.Notes) != 0 {
				t.Errorf("CRS %q, notes %q; want EPSG:32631 and none", fp.CRS, fp.Notes)
			}
			n := 0
			for _, f := range files {
				if f.Role != RoleChunk || f.Array.Rank() != 2 {
					continue
				}
				key, err := f.Array.ChunkKey(f.Coords)
				if err != nil {
					t.Fatal(err)
				}
				ky, kx := f.Array.ChunkShape[0], f.Array.ChunkShape[1]
				r, c := f.Coords[0], f.Coords[1]
				want := geom.BBox{
					MinX: gt[0] + float64(c*kx)*gt[1], MaxX: gt[0] + float64(min((c+1)*kx, w))*gt[1],
					MinY: gt[3] + float64(min((r+1)*ky, h))*gt[5], MaxY: gt[3] + float64(r*ky)*gt[5],
				}
				got, ok := fp.Box(key)
				if !ok || !nearBox(got, want) {
					t.Errorf("%s: box %v %v, want %v", key, got, ok, want)
				}
				if got2, ok := fp.Box(key + "@0123"); !ok || got2 != got {
					t.Errorf("%s@: a piece of a chunk has box %v %v, want its chunk's", key, got2, ok)
				}
				n++
			}
			if n < 8 {
				t.Fatalf("only %d 2-D chunks checked", n)
			}
		})
	}
}

// xarrayCube writes a CF cube (time, lat, lon) with zarr-python's
// default Blosc compressor, and a plain array with no georeferencing.
const xarrayCube = `
import sys, numpy as np, pandas as pd, xarray as xr, zarr
out = sys.argv[1]
xr.Dataset(
    {"t2m": (("time", "lat", "lon"), np.zeros((3, 10, 12), "f4"))},
    coords={"time": pd.date_range("2024-01-01", periods=3),
            "lat": np.linspace(50, 41, 10), "lon": np.linspace(0, 11, 12)},
).to_zarr(out + "/cube.zarr", mode="w", encoding={"t2m": {"chunks": (1, 4, 4)}})
a = zarr.open(out + "/plain.zarr", mode="w", shape=(8, 8), chunks=(4, 4), dtype="i2")
a[:] = 1
xr.Dataset(
    {"v": (("lat", "lon"), np.zeros((4, 4), "f4"))},
    coords={"lat": [50.0, 49.0, 49.5, 48.0], "lon": np.arange(4.0)},
).to_zarr(out + "/badlat.zarr", mode="w")
`

// TestFootprintsXarray: a CF cube's chunks get the extent of their cells
// (half a spacing beyond the outer centres, lat descending), in
// longitude/latitude; an array with no georeferencing gets none, and is
// listed as plain, not as a failure.
func TestFootprintsXarray(t *testing.T) {
	requirePythonZarr(t)
	dir := t.TempDir()
	if out, err := exec.Command(formattest.Python, "-c", xarrayCube, dir).CombinedOutput(); err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	st, files := checkStore(t, filepath.Join(dir, "cube.zarr"))
	fp := Locate(os.DirFS(filepath.Join(dir, "cube.zarr")), st)
	if fp.CRS != "OGC:CRS84" || len(fp.Notes) != 0 {
		t.Errorf("CRS %q notes %q, want OGC:CRS84 and none", fp.CRS, fp.Notes)
	}
	n := 0
	for _, f := range files {
		if f.Role != RoleChunk || f.Array.Path != "t2m" {
			continue
		}
		key, _ := f.Array.ChunkKey(f.Coords)
		r, c := float64(f.Coords[1]), float64(f.Coords[2])
		want := geom.BBox{MinX: 4*c - 0.5, MaxX: math.Min(4*c+4, 12) - 0.5,
			MinY: 50.5 - math.Min(4*r+4, 10), MaxY: 50.5 - 4*r}
		if got, ok := fp.Box(key); !ok || !nearBox(got, want) {
			t.Errorf("%s: %v %v, want %v", key, got, ok, want)
		}
		n++
	}
	if n != 3*3*3 {
		t.Errorf("%d t2m chunks, want 27", n)
	}
	if _, ok := fp.Box("lat/c/0"); ok {
		t.Error("a 1-D coordinate chunk has a footprint")
	}

	st, files = checkStore(t, filepath.Join(dir, "plain.zarr"))
	fp = Locate(os.DirFS(filepath.Join(dir, "plain.zarr")), st)
	if len(fp.Plain) != 1 || !strings.HasPrefix(fp.Plain[0], "/: ") || len(fp.Notes) != 0 || fp.CRS != "" {
		t.Errorf("plain array: plain %q notes %q CRS %q; want one plain line on /", fp.Plain, fp.Notes, fp.CRS)
	}
	for _, f := range files {
		if f.Role == RoleChunk {
			key, _ := f.Array.ChunkKey(f.Coords)
			if b, ok := fp.Box(key); ok {
				t.Errorf("%s of an array with no georeferencing: box %v", key, b)
			}
		}
	}

	// Coordinates that are there but unusable are a failure, noted.
	st, _ = checkStore(t, filepath.Join(dir, "badlat.zarr"))
	fp = Locate(os.DirFS(filepath.Join(dir, "badlat.zarr")), st)
	if len(fp.Notes) != 1 || !strings.Contains(fp.Notes[0], "v: coordinate array lat is not strictly monotonic") || len(fp.Plain) != 0 {
		t.Errorf("non-monotonic lat: notes %q plain %q", fp.Notes, fp.Plain)
	}
}

// TestFootprintsCorpus: Locate never fails nor panics on the third-party
// stores, and every array of two or more dimensions is located, noted or
// plain.
func TestFootprintsCorpus(t *testing.T) {
	for _, dir := range corpusStores(t) {
		st, _, err := ScanDir(dir)
		if err != nil {
			continue // corpus_test says which and why
		}
		fp := Locate(os.DirFS(dir), st)
		want := 0
		for _, n := range st.Nodes {
			if n.Array != nil && n.Array.Rank() >= 2 {
				want++
			}
		}
		if got := len(fp.Located()) + len(fp.Notes) + len(fp.Plain); got != want {
			t.Errorf("%s: %d located + %d noted + %d plain, want %d arrays", filepath.Base(dir), len(fp.Located()), len(fp.Notes), len(fp.Plain), want)
		}
		t.Logf("%s: located %q, notes %q, plain %q", filepath.Base(dir), fp.Located(), fp.Notes, fp.Plain)
	}
}
