package georef

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
)

// python is Debian's python3 with xarray and zarr.
func python(t *testing.T) string {
	t.Helper()
	return formattest.RequirePython(t, "xarray", "zarr")
}

// TestXarrayCube: an xarray cube t2m(time, lat, lon) with descending
// latitude, Blosc-compressed coordinates and a CF grid mapping gets the
// chunk boxes of its cell edges and the grid mapping's CRS.
func TestXarrayCube(t *testing.T) {
	store := filepath.Join(t.TempDir(), "cube.zarr")
	if out, err := exec.Command(python(t), "testdata/xarray_cube.py", store).CombinedOutput(); err != nil {
		t.Fatalf("xarray_cube.py: %v\n%s", err, out)
	}
	g, a, err := locateDir(t, store, "t2m")
	if err != nil {
		t.Fatal(err)
	}
	if g.XDim != 2 || g.YDim != 1 || g.CRS != "EPSG:4326" || g.WKT == "" || g.Convention != "coordinates" {
		t.Fatalf("grid %+v", g)
	}
	// lat i = 60 - i (21 rows), lon i = -10 + 1.5 i (20 columns);
	// chunks are 5 rows by 7 columns.
	for j := 0; j*5 < 21; j++ {
		for c := 0; c*7 < 20; c++ {
			got, ok := g.Box([]int{2, j, c})
			want := [4]float64{-10.75 + 1.5*float64(7*c), 60.5 - float64(min(5*j+5, 21)),
				-10.75 + 1.5*float64(min(7*c+7, 20)), 60.5 - float64(5*j)}
			if !ok || !near(got.MinX, want[0]) || !near(got.MinY, want[1]) || !near(got.MaxX, want[2]) || !near(got.MaxY, want[3]) {
				t.Errorf("chunk 2.%d.%d: %v, want %v", j, c, got, want)
			}
		}
	}
	if b := g.Bounds(); !near(b.MinX, -10.75) || !near(b.MaxY, 60.5) || !near(b.MinY, 39.5) || !near(b.MaxX, 19.25) {
		t.Errorf("bounds %v", b)
	}
	if _, ok := g.Box([]int{0, 0}); ok {
		t.Error("a 2-D index has a box in a 3-D grid")
	}
	// The time coordinate is no spatial dimension, so an array of time
	// alone has no footprint, with the reason said.
	if _, err := Locate(Array{Shape: a.Shape[:1], ChunkShape: a.ChunkShape[:1], DimNames: []string{"time"}}, dirSource{store}); err == nil {
		t.Error("a 1-D time array was located")
	}
}
