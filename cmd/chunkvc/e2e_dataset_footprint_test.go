package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
)

// TestDatasetFootprints: a Zarr store GDAL's driver wrote from a UTM
// GeoTIFF is committed with a footprint on every 2-D chunk (the pixels'
// extent by gdalinfo's geotransform) and the GeoTIFF's CRS; checkout
// --bbox of one corner writes exactly the chunks that meet it (and the
// metadata and coordinate arrays, which have no footprint); a store whose
// coordinates cannot be used is committed all the same, with a warning
// that says why.
func TestDatasetFootprints(t *testing.T) {
	r := newRunner(t)
	r.git("init", "-q", "-b", "main")
	r.cv("init")
	tif := r.path("src.tif")
	// 10 m pixels, 70×50, blocks of 16×32 (rows×columns): a 4×3 grid.
	formattest.Run1(t, "gdal_create", "-q", "-of", "GTiff", "-outsize", "70", "50", "-bands", "1", "-ot", "Int16",
		"-burn", "3", "-a_srs", "EPSG:32631", "-a_ullr", "500000", "4600000", "500700", "4599500", tif)
	formattest.Run1(t, "gdal_translate", "-q", "-of", "Zarr", "-co", "FORMAT=ZARR_V2", "-co", "BLOCKSIZE=16,32",
		"-co", "COMPRESS=ZSTD", tif, r.path("dem.zarr"))
	if err := os.Remove(tif); err != nil {
		t.Fatal(err)
	}
	r.cv("track", "dem.zarr")
	r.cv("commit", "-q", "-m", "v1")

	var ls lsChunksJSON
	r.jsonOf(&ls, "ls-chunks", "--json", "dem.zarr")
	if ls.Summary["crs"] != "EPSG:32631" || !nearAll(floats(t, ls.Summary["bbox"]), []float64{500000, 4599500, 500700, 4600000}) {
		t.Errorf("summary crs %q bbox %q; want EPSG:32631 and the GeoTIFF's extent", ls.Summary["crs"], ls.Summary["bbox"])
	}
	located := 0
	for _, c := range ls.Chunks {
		var r0, c0 int
		if _, err := fmt.Sscanf(c.Key[strings.LastIndex(c.Key, "/c/")+3:], "%d/%d", &r0, &c0); err != nil || strings.Count(c.Key, "/") != 3 {
			if c.BBox != nil {
				t.Errorf("%s: not a 2-D chunk, footprint %v", c.Key, c.BBox)
			}
			continue
		}
		want := [4]float64{500000 + float64(c0*32)*10, 4600000 - float64(min((r0+1)*16, 50))*10,
			500000 + float64(min((c0+1)*32, 70))*10, 4600000 - float64(r0*16)*10}
		if got := c.BBox; got == nil || !nearAll([]float64{got.MinX, got.MinY, got.MaxX, got.MaxY}, want[:]) {
			t.Errorf("%s: footprint %v, want %v", c.Key, c.BBox, want)
		}
		located++
	}
	if located != 12 {
		t.Fatalf("%d located chunks, want 12 (4 rows × 3 columns)", located)
	}

	// The lower-left corner: rows 48..49 (the last block row, 3) and
	// columns 0..2 (block column 0) only.
	full := listing(t, r.path("dem.zarr"))
	if err := os.RemoveAll(r.path("dem.zarr")); err != nil {
		t.Fatal(err)
	}
	r.cv("checkout", "--bbox", "500001,4599501,500020,4599510", "--", "dem.zarr")
	got := listing(t, r.path("dem.zarr"))
	var chunks []string
	for p, data := range got {
		if full[p] != data {
			t.Errorf("%s: differs from the committed file", p)
		}
		if dir, name := filepath.Split(p); strings.Count(name, ".") == 1 && !strings.HasPrefix(name, ".") && filepath.Base(dir) == "dem" {
			chunks = append(chunks, name)
		}
	}
	sort.Strings(chunks)
	if strings.Join(chunks, " ") != "3.0" {
		t.Errorf("checkout --bbox wrote 2-D chunks %q, want just 3.0", chunks)
	}
	for p := range full {
		if _, ok := got[p]; !ok && (strings.HasSuffix(p, "zarray") || strings.HasPrefix(p, "X/") || strings.HasPrefix(p, "Y/")) {
			t.Errorf("checkout --bbox left out %s (metadata and coordinates have no footprint: always written)", p)
		}
	}
	r.cv("checkout", "--", "dem.zarr")
	sameTree(t, "full checkout after --bbox", full, listing(t, r.path("dem.zarr")))

	// Coordinates that are there but unusable: committed, with a warning.
	py := formattest.RequirePython(t, "zarr", "numpy", "xarray")
	r.python(t, py, `import xarray as xr
xr.Dataset({"v": (("lat", "lon"), np.zeros((4, 4), "f4"))},
           coords={"lat": [50.0, 49.0, 49.5, 48.0], "lon": np.arange(4.0)}).to_zarr("bad.zarr", mode="w")`)
	r.cv("track", "bad.zarr")
	var res struct {
		Files []struct {
			Path     string   `json:"path"`
			Warnings []string `json:"warnings"`
		} `json:"files"`
	}
	r.jsonOf(&res, "commit", "--json", "-m", "bad")
	found := false
	for _, f := range res.Files {
		if f.Path == "bad.zarr" {
			found = true
			if len(f.Warnings) != 1 || !strings.Contains(f.Warnings[0], "lat is not strictly monotonic") {
				t.Errorf("bad.zarr warnings %q, want one naming lat", f.Warnings)
			}
		}
	}
	if !found {
		t.Fatalf("bad.zarr not in the commit: %+v", res)
	}
	r.jsonOf(&ls, "ls-chunks", "--json", "bad.zarr")
	if !strings.Contains(ls.Summary["footprint_fallback"], "v: coordinate array lat") {
		t.Errorf("bad.zarr summary %v lacks the footprint_fallback reason", ls.Summary)
	}
}

// nearAll compares coordinates to a millimetre.
func nearAll(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-3 {
			return false
		}
	}
	return true
}

func floats(t *testing.T, s string) []float64 {
	t.Helper()
	var out []float64
	for f := range strings.SplitSeq(s, ",") {
		var v float64
		if _, err := fmt.Sscan(f, &v); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		out = append(out, v)
	}
	return out
}
