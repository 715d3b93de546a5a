package georef

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats/zarr/codec"
	"github.com/chunkvc/chunkvc/geom"
)

// mapSource is an in-memory group: coordinate values and attributes by
// array name.
type mapSource struct {
	coords map[string][]float64
	attrs  map[string]string // raw JSON objects
	err    error             // returned by Coord for every name, when set
}

func (m mapSource) Coord(name string) ([]float64, bool, error) {
	if m.err != nil {
		return nil, false, m.err
	}
	v, ok := m.coords[name]
	return v, ok, nil
}

func (m mapSource) Attrs(name string) (map[string]json.RawMessage, bool, error) {
	s, ok := m.attrs[name]
	if !ok {
		if _, isCoord := m.coords[name]; isCoord {
			return map[string]json.RawMessage{}, true, nil
		}
		return nil, false, nil
	}
	var a map[string]json.RawMessage
	return a, true, json.Unmarshal([]byte(s), &a)
}

func attrs(t *testing.T, s string) map[string]json.RawMessage {
	t.Helper()
	var a map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &a); err != nil {
		t.Fatal(err)
	}
	return a
}

func seq(start, step float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = start + step*float64(i)
	}
	return out
}

func TestReasons(t *testing.T) {
	_, zfpy := codec.NewV2(json.RawMessage(`{"id":"zfpy"}`), nil, json.RawMessage(`"<f8"`), "C", []int{4})
	for _, tc := range []struct {
		name   string
		a      Array
		src    mapSource
		reason string
	}{
		{"no coordinates", Array{Shape: []int{4, 4}, ChunkShape: []int{2, 2}, DimNames: []string{"y", "x"}}, mapSource{}, "no coordinate arrays for dims y,x"},
		{"no names", Array{Shape: []int{4, 4}, ChunkShape: []int{2, 2}}, mapSource{}, "no dimension names"},
		{"no spatial dims", Array{Shape: []int{4, 4}, ChunkShape: []int{2, 2}, DimNames: []string{"time", "band"}}, mapSource{}, "no x/y dimensions among time,band"},
		{"1-D", Array{Shape: []int{4}, ChunkShape: []int{2}, DimNames: []string{"x"}}, mapSource{}, "no two spatial dimensions"},
		{"length", Array{Shape: []int{4, 4}, ChunkShape: []int{2, 2}, DimNames: []string{"y", "x"}},
			mapSource{coords: map[string][]float64{"x": seq(0, 1, 4), "y": seq(0, 1, 5)}}, "coordinate array y has 5 values for 4 cells"},
		{"not monotonic", Array{Shape: []int{4, 4}, ChunkShape: []int{2, 2}, DimNames: []string{"y", "x"}},
			mapSource{coords: map[string][]float64{"x": {0, 1, 3, 2}, "y": seq(0, 1, 4)}}, "coordinate array x is not strictly monotonic"},
		{"codec", Array{Shape: []int{4, 4}, ChunkShape: []int{2, 2}, DimNames: []string{"lat", "lon"}},
			mapSource{err: zfpy}, "coordinate array lon"},
	} {
		g, err := Locate(tc.a, tc.src)
		var nl *NotLocated
		if g != nil || !errors.As(err, &nl) || !strings.Contains(nl.Reason, tc.reason) {
			t.Errorf("%s: %v, %v; want a NotLocated saying %q", tc.name, g, err, tc.reason)
		}
	}
	_, err := Locate(Array{Shape: []int{4, 4}, ChunkShape: []int{2, 2}, DimNames: []string{"lat", "lon"}}, mapSource{err: zfpy})
	if !errors.Is(err, codec.ErrUnsupported) || !strings.Contains(err.Error(), "codec zfpy unsupported") {
		t.Errorf("an unsupported codec is not what the NotLocated unwraps to: %v", err)
	}
}

// TestAxesByAttributes: dimensions with no telling names are found by
// their coordinates' CF attributes, in a 4-D array, and a single cell
// gives a point.
func TestAxesByAttributes(t *testing.T) {
	src := mapSource{
		coords: map[string][]float64{"row": {45}, "col": seq(100, 10, 6)},
		attrs: map[string]string{"row": `{"standard_name":"projection_y_coordinate"}`, "col": `{"axis":"X"}`,
			"crs": `{"spatial_ref":"PROJCS[\"NAD83 / UTM zone 10N\",GEOGCS[\"NAD83\",AUTHORITY[\"EPSG\",\"4269\"]],AUTHORITY[\"EPSG\",\"26910\"]]"}`},
	}
	a := Array{Shape: []int{2, 3, 1, 6}, ChunkShape: []int{1, 1, 1, 4}, DimNames: []string{"time", "band", "row", "col"},
		Attrs: attrs(t, `{"grid_mapping":"crs: col row"}`)}
	g, err := Locate(a, src)
	if err != nil {
		t.Fatal(err)
	}
	if g.XDim != 3 || g.YDim != 2 || g.CRS != "EPSG:26910" {
		t.Fatalf("grid %+v", g)
	}
	b0, _ := g.Box([]int{1, 2, 0, 0})
	b1, _ := g.Box([]int{0, 0, 0, 1})
	if b0 != (geom.BBox{MinX: 95, MinY: 45, MaxX: 135, MaxY: 45}) || b1 != (geom.BBox{MinX: 135, MinY: 45, MaxX: 155, MaxY: 45}) {
		t.Errorf("boxes %v %v", b0, b1)
	}
}

// TestTransform: the GeoZarr draft's spatial:transform and a CF grid
// mapping's GeoTransform give the same pixel-corner boxes; rotation is
// refused.
func TestTransform(t *testing.T) {
	want := geom.BBox{MinX: 1000 + 30*8, MinY: 5000 - 30*10, MaxX: 1000 + 30*10, MaxY: 5000 - 30*5}
	for name, a := range map[string]Array{
		"geozarr": {Shape: []int{10, 10}, ChunkShape: []int{5, 8}, DimNames: []string{"northing", "easting"},
			Attrs: attrs(t, `{"spatial:transform":[30,0,1000,0,-30,5000],"spatial:dimensions":["northing","easting"],"proj:code":"EPSG:32631"}`)},
		"gdal": {Shape: []int{10, 10}, ChunkShape: []int{5, 8}, DimNames: []string{"y", "x"},
			Attrs: attrs(t, `{"grid_mapping":"spatial_ref"}`)},
	} {
		src := mapSource{attrs: map[string]string{"spatial_ref": `{"GeoTransform":"1000 30 0 5000 0 -30","crs_wkt":"PROJCRS[\"WGS 84 / UTM zone 31N\",ID[\"EPSG\",32631]]"}`}}
		g, err := Locate(a, src)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got, _ := g.Box([]int{1, 1}); got != want || g.CRS != "EPSG:32631" || g.Convention != "transform" {
			t.Errorf("%s: box %v CRS %q, want %v EPSG:32631", name, got, g.CRS, want)
		}
	}
	a := Array{Shape: []int{10, 10}, ChunkShape: []int{5, 5}, DimNames: []string{"y", "x"}, Attrs: attrs(t, `{"spatial:transform":[30,1,1000,0,-30,5000]}`)}
	if _, err := Locate(a, mapSource{}); err == nil {
		t.Error("a rotated transform was located")
	}
}

func TestCRSNames(t *testing.T) {
	for raw, want := range map[string]string{
		`{"_CRS":{"url":"http://www.opengis.net/def/crs/EPSG/0/3035"}}`:                         "EPSG:3035",
		`{"_CRS":{"projjson":{"name":"x","id":{"authority":"IAU_2015","code":49900}}}}`:         "IAU_2015:49900",
		`{"_CRS":{"wkt":"GEOGCS[\"WGS 84\",DATUM[\"d\",AUTHORITY[\"EPSG\",\"6326\"]]]"}}`:       "WGS 84",
		`{"proj:wkt2":"PROJCRS[\"a\",BASEGEOGCRS[\"b\",ID[\"EPSG\",4326]],ID[\"EPSG\",2154]]"}`: "EPSG:2154",
		`{}`: "",
	} {
		got, _, err := findCRS(attrs(t, raw), mapSource{})
		if err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", raw, got, err, want)
		}
	}
}
