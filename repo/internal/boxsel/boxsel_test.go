package boxsel

import (
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/geom"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
)

func tiles() *manifest.Manifest {
	box := func(x0, y0, x1, y1 float64) *geom.BBox { return &geom.BBox{MinX: x0, MinY: y0, MaxX: x1, MaxY: y1} }
	return &manifest.Manifest{Path: "a.tif", Format: formats.TIFF, Summary: []manifest.Field{{Name: "crs", Value: "EPSG:3857"}},
		Chunks: []manifest.Chunk{
			{Key: "z0/0_0", ID: hashing.Sum([]byte("a")), BBox: box(0, 0, 10, 10)},
			{Key: "z0/0_1", ID: hashing.Sum([]byte("b")), BBox: box(10, 0, 20, 10)},
			{Key: "header", ID: hashing.Sum([]byte("h"))},
		}}
}

func TestWanted(t *testing.T) {
	m := tiles()
	want, withBox := Wanted(m, geom.BBox{MinX: 12, MinY: 1, MaxX: 13, MaxY: 2})
	if withBox != 2 || len(want) != 1 || !want[m.Chunks[1].ID] {
		t.Fatalf("Wanted = %v, %d; want the second tile of 2 with a footprint", want, withBox)
	}
}

func TestPlan(t *testing.T) {
	box := geom.BBox{MinX: 1, MinY: 1, MaxX: 2, MaxY: 2}
	if got, err := Plan(tiles(), box, ""); err != nil || got != box {
		t.Fatalf("the file's own CRS: %v, %v", got, err)
	}
	if got, err := Plan(tiles(), box, "epsg:3857"); err != nil || got != box {
		t.Fatalf("the file's CRS named: %v, %v", got, err)
	}
	if got, err := Plan(tiles(), geom.BBox{MinX: 0, MinY: 0, MaxX: 1, MaxY: 1}, "EPSG:4326"); err != nil || got.MaxX < 100000 {
		t.Fatalf("EPSG:4326 into 3857: %v, %v", got, err)
	}
	for _, tc := range []struct {
		name, crs, err string
		m              func(*manifest.Manifest)
	}{
		{"format", "", "not cdc", func(m *manifest.Manifest) { m.Format = "cdc" }},
		{"no footprints", "", "no chunk of this file has a footprint", func(m *manifest.Manifest) {
			for i := range m.Chunks {
				m.Chunks[i].BBox = nil
			}
		}},
		{"not EPSG", "WGS84", "want EPSG:<code>", func(*manifest.Manifest) {}},
		{"no file CRS", "EPSG:4326", "the file's CRS is not known", func(m *manifest.Manifest) { m.Summary = nil }},
		{"no converter", "EPSG:2154", "cannot convert", func(*manifest.Manifest) {}},
	} {
		m := tiles()
		tc.m(m)
		if _, err := Plan(m, box, tc.crs); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v; want an error saying %q", tc.name, err, tc.err)
		}
	}
}
