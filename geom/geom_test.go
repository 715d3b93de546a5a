package geom

import (
	"encoding/json"
	"math"
	"testing"
)

func TestParse(t *testing.T) {
	good := map[string]BBox{
		"1,2,3,4":             {1, 2, 3, 4},
		" -180 , -90,180, 90": {-180, -90, 180, 90},
		"0,0,0,0":             {},
		"1e3,2,3e3,4":         {1000, 2, 3000, 4},
	}
	for s, want := range good {
		got, err := Parse(s)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "1,2,3", "1,2,3,4,5", "a,2,3,4", "NaN,0,1,1", "0,0,Inf,1", "3,0,1,1", "0,3,1,1"} {
		if b, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", s, b)
		}
	}
}

func TestValidUnionIntersects(t *testing.T) {
	a, b := BBox{0, 0, 2, 2}, BBox{1, 1, 3, 4}
	if got := a.Union(b); got != (BBox{0, 0, 3, 4}) {
		t.Errorf("Union = %v", got)
	}
	if got := Empty.Union(a); got != a {
		t.Errorf("Empty is not Union's identity: %v", got)
	}
	if !a.Intersects(b) || !b.Intersects(a) {
		t.Error("overlapping boxes do not intersect")
	}
	if edge := (BBox{2, 0, 4, 2}); a.Intersects(edge) || edge.Intersects(a) {
		t.Error("boxes touching along an edge intersect")
	}
	if far := (BBox{5, 5, 6, 6}); a.Intersects(far) {
		t.Error("disjoint boxes intersect")
	}
	for _, bad := range []BBox{{math.NaN(), 0, 1, 1}, {0, 0, math.Inf(1), 1}, {2, 0, 1, 1}, {0, 2, 1, 1}, Empty} {
		if bad.Valid() || bad.Area() != 0 {
			t.Errorf("%v: Valid %v Area %v", bad, bad.Valid(), bad.Area())
		}
	}
	if a.Area() != 4 || Fraction(&BBox{0, 0, 1, 1}, &a) != 0.25 || Fraction(nil, &a) != 0 || Fraction(&a, &BBox{1, 1, 1, 5}) != 0 {
		t.Error("Area or Fraction")
	}
}

func TestUnionPtr(t *testing.T) {
	a := &BBox{0, 0, 1, 1}
	if UnionPtr(nil, nil) != nil {
		t.Error("nil ∪ nil is not nil")
	}
	u := UnionPtr(nil, a)
	if u == a || *u != *a {
		t.Error("nil ∪ a must be a copy of a")
	}
	u.MaxX = 9
	if a.MaxX != 1 {
		t.Error("changing the union changed its argument")
	}
	if got := UnionPtr(a, &BBox{-1, 0, 0, 5}); *got != (BBox{-1, 0, 1, 5}) {
		t.Errorf("UnionPtr = %v", *got)
	}
}

// JSON stays the array chunkvc's outputs always wrote.
func TestJSON(t *testing.T) {
	type holder struct {
		B *BBox `json:"bbox,omitempty"`
	}
	b, err := json.Marshal(holder{&BBox{1.5, -2, 3, 4e6}})
	if err != nil || string(b) != `{"bbox":[1.5,-2,3,4000000]}` {
		t.Fatalf("%s %v", b, err)
	}
	var h holder
	if err := json.Unmarshal(b, &h); err != nil || *h.B != (BBox{1.5, -2, 3, 4e6}) {
		t.Fatalf("%+v %v", h.B, err)
	}
	if b, _ := json.Marshal(holder{}); string(b) != `{}` {
		t.Errorf("nil bbox: %s", b)
	}
	if err := json.Unmarshal([]byte(`{"bbox":{"MinX":1}}`), &h); err == nil {
		t.Error("an object accepted as a bbox")
	}
}

func TestString(t *testing.T) {
	if s := (BBox{1.23456789, -0.5, 10, 1e-9}).String(); s != "1.234568,-0.5,10,0" {
		t.Errorf("String = %q", s)
	}
}

func TestWebMercator(t *testing.T) {
	// Known points: the origin, 180°E on the equator, and the latitude
	// at which the projection's square closes.
	x, y := LonLatToWebMercator(180, 0)
	if math.Abs(x-20037508.342789244) > 1e-6 || math.Abs(y) > 1e-6 {
		t.Errorf("180,0 → %v,%v", x, y)
	}
	_, y = LonLatToWebMercator(0, 89.9)
	if math.Abs(y-20037508.34) > 1 {
		t.Errorf("latitude is not clamped at the square's edge: %v", y)
	}
	for _, p := range [][2]float64{{0, 0}, {10.5, 53.1}, {-122.4, 37.8}, {179, -80}} {
		x, y := LonLatToWebMercator(p[0], p[1])
		lon, lat := WebMercatorToLonLat(x, y)
		if math.Abs(lon-p[0]) > 1e-9 || math.Abs(lat-p[1]) > 1e-9 {
			t.Errorf("%v round trips to %v,%v", p, lon, lat)
		}
	}
	// A box's envelope: the corners map to the corners (the projection
	// is monotone on both axes).
	b := BBox{5, 45, 15, 55}.Transform(LonLatToWebMercator)
	x0, y0 := LonLatToWebMercator(5, 45)
	x1, y1 := LonLatToWebMercator(15, 55)
	if math.Abs(b.MinX-x0) > 1e-6 || math.Abs(b.MinY-y0) > 1e-6 || math.Abs(b.MaxX-x1) > 1e-6 || math.Abs(b.MaxY-y1) > 1e-6 {
		t.Errorf("Transform = %v", b)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"1,2,3,4", "-180,-90,180,90", "1,2,3", "NaN,0,1,1", "1e308,0,1e309,1", "1e308,0,1e308,1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := Parse(s)
		if err != nil {
			return
		}
		if !b.Valid() {
			t.Fatalf("Parse(%q) accepted an invalid box %v", s, b)
		}
		if again, err := Parse(b.String()); err != nil || !again.Valid() {
			t.Fatalf("String of %v does not parse: %v", b, err)
		}
	})
}

func TestConverter(t *testing.T) {
	f, ok := Converter("EPSG:4326", "EPSG:3857")
	if x, _ := f(180, 0); !ok || math.Abs(x-math.Pi*EarthRadius) > 1e-6 {
		t.Errorf("4326 → 3857: ok %v, x %v", ok, x)
	}
	g, ok := Converter("EPSG:3857", "EPSG:4326")
	if lon, _ := g(math.Pi*EarthRadius, 0); !ok || math.Abs(lon-180) > 1e-9 {
		t.Errorf("3857 → 4326: ok %v, lon %v", ok, lon)
	}
	for _, p := range [][2]string{{"EPSG:4326", "EPSG:32633"}, {"EPSG:4326", "EPSG:4326"}, {"epsg:4326", "EPSG:3857"}} {
		if _, ok := Converter(p[0], p[1]); ok {
			t.Errorf("Converter(%s, %s) ok", p[0], p[1])
		}
	}
}
