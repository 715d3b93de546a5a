//go:build gdal

package gdal

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/airbusgeo/godal"

	"github.com/chunkvc/chunkvc/geom"
)

// gradientTIFF writes a 64×32 UInt16 GeoTIFF whose values grow from left
// to right, in UTM 33N with 10 m pixels from (500000, 4600320).
func gradientTIFF(t *testing.T) string {
	t.Helper()
	renderRegister.Do(godal.RegisterAll)
	name := filepath.Join(t.TempDir(), "grad.tif")
	ds, err := godal.Create(godal.GTiff, name, 1, godal.UInt16, 64, 32)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]uint16, 64*32)
	for i := range buf {
		buf[i] = uint16(100 * (i % 64))
	}
	sr, err := godal.NewSpatialRefFromEPSG(32633)
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	if err := ds.SetSpatialRef(sr); err != nil {
		t.Fatal(err)
	}
	if err := ds.SetGeoTransform([6]float64{500000, 10, 0, 4600320, 0, -10}); err != nil {
		t.Fatal(err)
	}
	if err := ds.Bands()[0].Write(0, 0, buf, 64, 32); err != nil {
		t.Fatal(err)
	}
	if err := ds.Close(); err != nil {
		t.Fatal(err)
	}
	return name
}

func TestRenderPreview(t *testing.T) {
	img, box, err := RenderPreview(gradientTIFF(t), 32, 16)
	if err != nil {
		t.Fatal(err)
	}
	if want := (geom.BBox{MinX: 500000, MinY: 4600000, MaxX: 500640, MaxY: 4600320}); box != want {
		t.Fatalf("bbox %v, want %v", box, want)
	}
	if b := img.Bounds(); b.Dx() != 32 || b.Dy() != 16 {
		t.Fatalf("preview is %v", b)
	}
	left, right := img.RGBAAt(1, 8), img.RGBAAt(30, 8)
	if left.A != 255 || right.A != 255 || left.R >= right.R || right.R < 200 || left.R > 50 {
		t.Fatalf("stretch: left %v, right %v", left, right)
	}
	if _, _, err := RenderPreview(filepath.Join(t.TempDir(), "missing.tif"), 8, 8); err == nil {
		t.Fatal("missing file rendered")
	}
}

func TestLonLat(t *testing.T) {
	tr, err := NewLonLat("EPSG:32633")
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	x, y := []float64{500000}, []float64{4600000}
	if err := tr.Points(x, y); err != nil {
		t.Fatal(err)
	}
	// The central meridian of zone 33 is 15°E; 4600 km north is ≈41.55°N.
	if math.Abs(x[0]-15) > 1e-6 || math.Abs(y[0]-41.5523) > 1e-3 {
		t.Fatalf("UTM 33N (500000, 4600000) → %v, %v", x[0], y[0])
	}
	ll, err := NewLonLat("OGC:CRS84")
	if err != nil {
		t.Fatal(err)
	}
	defer ll.Close()
	x, y = []float64{7.5}, []float64{46.25}
	if err := ll.Points(x, y); err != nil || math.Abs(x[0]-7.5) > 1e-9 || math.Abs(y[0]-46.25) > 1e-9 {
		t.Fatalf("CRS84 → %v, %v (%v): axis order must stay longitude, latitude", x[0], y[0], err)
	}
	if _, err := NewLonLat("EPSG:999999"); err == nil {
		t.Fatal("unknown CRS accepted")
	}
}
