package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
)

// writeFGB3857 writes points (id, lon, lat) as pts.fgb in EPSG:3857 with
// ogr2ogr, projected from lon/lat.
func writeFGB3857(t *testing.T, r *runner, pts [][3]float64) {
	t.Helper()
	feats := make([]string, len(pts))
	for i, p := range pts {
		feats[i] = fmt.Sprintf(`{"type":"Feature","properties":{"id":%g},"geometry":{"type":"Point","coordinates":[%g,%g]}}`, p[0], p[1], p[2])
	}
	src := filepath.Join(t.TempDir(), "in.geojson")
	if err := os.WriteFile(src, []byte(`{"type":"FeatureCollection","features":[`+strings.Join(feats, ",")+`]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(r.path("pts.fgb"))
	formattest.Run1(t, "ogr2ogr", "-f", "FlatGeobuf", "-s_srs", "EPSG:4326", "-t_srs", "EPSG:3857", "-nln", "pts", r.path("pts.fgb"), src)
}

// Issue 31: diff --features --format geojson of a FlatGeobuf in Web
// Mercator writes RFC 7946 lon/lat in the GDAL build: each side's
// geometry comes back to the lon/lat it was projected from.
func TestDiffFeaturesGeoJSONLonLat(t *testing.T) {
	formattest.RequireTool(t, "ogr2ogr")
	formattest.RequireTool(t, "gdal-config")
	bin := diffBinary(t, "gdal")
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "*.fgb")
	writeFGB3857(t, r, [][3]float64{{1, 10, 50}, {2, 11, 51}, {4, 9, 40}})
	r.cv("commit", "-m", "v1")
	writeFGB3857(t, r, [][3]float64{{1, 10, 50}, {2, 12.5, 52.25}, {3, 13, 45}})
	r.cv("commit", "-m", "v2")
	var fc struct {
		Features []struct {
			Geometry struct {
				Type        string     `json:"type"`
				Coordinates [2]float64 `json:"coordinates"`
			} `json:"geometry"`
			Properties struct {
				Key  string `json:"key"`
				Side string `json:"side"`
			} `json:"properties"`
		} `json:"features"`
	}
	out := r.dv(bin, 0, "diff", "HEAD~1", "HEAD", "--features", "--format", "geojson")
	if err := json.Unmarshal([]byte(out), &fc); err != nil {
		t.Fatalf("geojson: %v\n%s", err, out)
	}
	want := map[string][2]float64{"3 after": {13, 45}, "4 before": {9, 40}, "2 before": {11, 51}, "2 after": {12.5, 52.25}}
	if len(fc.Features) != len(want) {
		t.Fatalf("%d features, want %d:\n%s", len(fc.Features), len(want), out)
	}
	for _, f := range fc.Features {
		w, ok := want[f.Properties.Key+" "+f.Properties.Side]
		got := f.Geometry.Coordinates
		if !ok || math.Abs(got[0]-w[0]) > 1e-6 || math.Abs(got[1]-w[1]) > 1e-6 {
			t.Errorf("feature %s %s at %v, want lon/lat %v", f.Properties.Key, f.Properties.Side, got, w)
		}
	}
}
