package featurediff

import (
	"fmt"
	"testing"
)

// TestProject: every x/y position of a nested geometry goes through the
// transform once, in order, and z stays.
func TestProject(t *testing.T) {
	g := &Geometry{Type: "GeometryCollection", Geometries: []Geometry{
		{Type: "Point", Coordinates: []float64{1, 2, 9}},
		{Type: "Polygon", Coordinates: [][][]float64{{{0, 0}, {3, 0}, {0, 4}, {0, 0}}}},
	}}
	calls := 0
	err := g.Project(func(x, y []float64) error {
		calls++
		for i := range x {
			x[i], y[i] = x[i]*10, y[i]+1
		}
		return nil
	})
	if err != nil || calls != 1 {
		t.Fatalf("err %v, %d calls", err, calls)
	}
	want := "GEOMETRYCOLLECTION (POINT (10 3 9), POLYGON ((0 1, 30 1, 0 5, 0 1)))"
	if got := g.WKT(); got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if err := (&Geometry{Type: "Point"}).Project(func(x, y []float64) error { return fmt.Errorf("called") }); err != nil {
		t.Errorf("an empty geometry was transformed: %v", err)
	}
}
