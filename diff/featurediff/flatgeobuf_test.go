package featurediff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats/flatgeobuf"
	"github.com/chunkvc/chunkvc/formats/formattest"
)

// flatgeobuf.Schema.Decode gives back what GDAL wrote: every geometry
// kind (as WKB, read back here into GeoJSON) and the properties, from a
// file of mixed types.
func TestDecodeGDALRecords(t *testing.T) {
	formattest.RequireTool(t, "ogr2ogr")
	geoms := []string{
		`{"type":"Point","coordinates":[1.5,2]}`,
		`{"type":"LineString","coordinates":[[0,0],[1,2],[-1,3]]}`,
		`{"type":"Polygon","coordinates":[[[0,0],[2,0],[2,2],[0,0]],[[0.5,0.5],[1,0.5],[1,1],[0.5,0.5]]]}`,
		`{"type":"MultiPoint","coordinates":[[0,0],[-3,4]]}`,
		`{"type":"MultiLineString","coordinates":[[[0,0],[1,1]],[[-2,-2],[-1,5]]]}`,
		`{"type":"MultiPolygon","coordinates":[[[[0,0],[1,0],[1,1],[0,0]]],[[[3,3],[4,3],[4,4],[3,3]]]]}`,
		`{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":[-4,-1]},{"type":"LineString","coordinates":[[0,0],[2,6]]}]}`,
	}
	var b strings.Builder
	b.WriteString(`{"type":"FeatureCollection","features":[`)
	for i, g := range geoms {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"type":"Feature","properties":{"id":%d,"label":"f%d","w":%d.25},"geometry":%s}`, i, i, i, g)
	}
	b.WriteString("]}")
	dir := t.TempDir()
	src, out := filepath.Join(dir, "in.geojson"), filepath.Join(dir, "out.fgb")
	if err := os.WriteFile(src, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	formattest.Run1(t, "ogr2ogr", "-f", "FlatGeobuf", "-nln", "layer", out, src)
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	s, err := flatgeobuf.ReadSchema(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(s.Columns) != "[id label w]" || !s.KeyKind("id") || !s.KeyKind("label") || s.KeyKind("w") {
		t.Fatalf("columns %v", s.Columns)
	}
	n := 0
	err = s.Decode(data[s.Records:], func(_ int, vals []any, wkb []byte) error {
		i := int(vals[0].(int64))
		if vals[1] != fmt.Sprintf("f%d", i) || vals[2] != float64(i)+0.25 {
			t.Errorf("feature %d: values %v", i, vals)
		}
		g, err := ParseWKB(wkb)
		if err != nil {
			t.Fatalf("feature %d: %v", i, err)
		}
		got, _ := json.Marshal(g)
		var a, w any
		_ = json.Unmarshal(got, &a)
		_ = json.Unmarshal([]byte(geoms[i]), &w)
		if !reflect.DeepEqual(a, w) {
			t.Errorf("feature %d: geometry %s, want %s", i, got, geoms[i])
		}
		n++
		return nil
	})
	if err != nil || n != len(geoms) {
		t.Fatalf("decoded %d of %d: %v", n, len(geoms), err)
	}
}
