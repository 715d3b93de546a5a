package diff

import (
	"github.com/chunkvc/chunkvc/formats/flatgeobuf"
	"github.com/chunkvc/chunkvc/geom"
	"github.com/chunkvc/chunkvc/hashing"
)

// MaxListedFeatures caps FlatGeobufDiff.Added and .Removed (the counts are
// always complete).
const MaxListedFeatures = 1000

// FeatureRef is one FlatGeobuf feature, named by the hash of its record.
type FeatureRef struct {
	ID   string     `json:"id"`
	BBox *geom.BBox `json:"bbox,omitempty"`
}

// FlatGeobufDiff is the FlatGeobuf part of a FileDiff.
type FlatGeobufDiff struct {
	FeaturesOld   int64 `json:"features_old"`
	FeaturesNew   int64 `json:"features_new"`
	BlocksChanged int   `json:"blocks_changed"`
	HeaderChanged bool  `json:"header_changed"`
	CRSChanged    bool  `json:"crs_changed"`
	// Compared is set when both versions were read feature by feature;
	// then the fields below are filled in.
	Compared        bool         `json:"features_compared"`
	FeaturesAdded   int          `json:"features_added"`
	FeaturesRemoved int          `json:"features_removed"`
	Added           []FeatureRef `json:"added,omitempty"`
	Removed         []FeatureRef `json:"removed,omitempty"`
}

// CompareFeatures fills f.FlatGeobuf's feature set difference from the
// feature records of the old and new versions (flatgeobuf.Features of
// each, in file order) and narrows f.BBox to the added and removed
// features. f must be a FlatGeobuf FileDiff from Compare. A feature is its
// record's hash: one moved within the file is neither added nor removed,
// and duplicates count one by one.
func (f *FileDiff) CompareFeatures(old, cur []flatgeobuf.Feature) {
	fg := f.FlatGeobuf
	count := map[hashing.ID]int{}
	for _, ft := range old {
		count[ft.ID]++
	}
	var box *geom.BBox
	grow := func(ft flatgeobuf.Feature) *geom.BBox {
		if ft.Empty() {
			return nil
		}
		b := ft.BBox
		box = geom.UnionPtr(box, &b)
		return &b
	}
	for _, ft := range cur {
		if count[ft.ID] > 0 {
			count[ft.ID]--
			continue
		}
		fg.FeaturesAdded++
		b := grow(ft)
		if len(fg.Added) < MaxListedFeatures {
			fg.Added = append(fg.Added, FeatureRef{ID: ft.ID.String(), BBox: b})
		}
	}
	for _, ft := range old {
		if count[ft.ID] == 0 {
			continue
		}
		count[ft.ID]--
		fg.FeaturesRemoved++
		b := grow(ft)
		if len(fg.Removed) < MaxListedFeatures {
			fg.Removed = append(fg.Removed, FeatureRef{ID: ft.ID.String(), BBox: b})
		}
	}
	fg.Compared = true
	if box != nil {
		f.BBox = box
	}
}
