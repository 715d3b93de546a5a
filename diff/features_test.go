package diff

import (
	"testing"

	"github.com/chunkvc/chunkvc/formats/flatgeobuf"
	"github.com/chunkvc/chunkvc/geom"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
)

func TestCompareFeatures(t *testing.T) {
	ft := func(name string, x float64) flatgeobuf.Feature {
		return flatgeobuf.Feature{ID: hashing.Sum([]byte(name)), BBox: geom.BBox{MinX: x, MinY: 0, MaxX: x + 1, MaxY: 1}}
	}
	empty := flatgeobuf.Feature{ID: hashing.Sum([]byte("empty")), BBox: geom.Empty}
	m := &manifest.Manifest{Path: "roads.fgb", Format: "flatgeobuf"}
	fd := Compare(m, m)
	// a moves, b is duplicated and loses one copy, c goes, d and the
	// empty feature come.
	fd.CompareFeatures(
		[]flatgeobuf.Feature{ft("a", 0), ft("b", 1), ft("b", 1), ft("c", 5)},
		[]flatgeobuf.Feature{ft("b", 1), ft("d", 9), ft("a", 0), empty})
	fg := fd.FlatGeobuf
	if !fg.Compared || fg.FeaturesAdded != 2 || fg.FeaturesRemoved != 2 {
		t.Fatalf("added %d removed %d compared %v", fg.FeaturesAdded, fg.FeaturesRemoved, fg.Compared)
	}
	if len(fg.Added) != 2 || fg.Added[0].ID != hashing.Sum([]byte("d")).String() || fg.Added[1].BBox != nil {
		t.Errorf("added %+v", fg.Added)
	}
	if want := (geom.BBox{MinX: 1, MaxX: 10, MaxY: 1}); fd.BBox == nil || *fd.BBox != want {
		t.Errorf("changed area %v, want %v (b, c and d)", fd.BBox, want)
	}
}
