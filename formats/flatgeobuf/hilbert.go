package flatgeobuf

import (
	"math"
	"sort"

	"github.com/chunkvc/chunkvc/geom"
)

// FlatGeobuf writers (GDAL's among them) store the features of an
// indexed file sorted along a Hilbert curve: each feature's bbox centre
// is scaled into a 65536² grid over the extent of all the features, and
// the features are ordered by the curve's index of that cell, highest
// first. A file written by a merge follows the same order, so that the
// tree over its records (BuildIndex) is as tight as GDAL's and the index
// stays derivable.

// hilbertMax is the largest grid coordinate (16 bits per axis).
const hilbertMax = 1<<16 - 1

// hilbertXY is the index of cell (x, y) along the Hilbert curve of
// order 16 that starts at (0, 0) and ends at (hilbertMax, 0). It walks the
// quadrants from the largest down, rotating the remaining coordinates
// into each quadrant's frame.
func hilbertXY(x, y uint32) uint32 {
	x, y = x&hilbertMax, y&hilbertMax
	var d uint32
	for s := uint32(1 << 15); s > 0; s >>= 1 {
		var rx, ry uint32
		if x&s != 0 {
			rx = 1
		}
		if y&s != 0 {
			ry = 1
		}
		d += s * s * ((3 * rx) ^ ry)
		if ry == 0 { // rotate the quadrant so its curve starts at its origin
			if rx == 1 {
				x, y = s-1-x&(s-1), s-1-y&(s-1)
			}
			x, y = y, x
		}
		x, y = x&(s-1), y&(s-1)
	}
	return d
}

// gridCell scales centre coordinate c of a bbox into [0, hilbertMax]
// over [lo, lo+span]; a zero span puts every feature in cell 0, and a
// centre that is no number (a feature without coordinates) lands in
// cell 0 too, where x86 puts it when GDAL converts it.
func gridCell(c, lo, span float64) uint32 {
	if span == 0 {
		return 0
	}
	v := math.Floor(hilbertMax * (c - lo) / span)
	if !(v >= 0) || v > math.MaxUint32 {
		return 0
	}
	return uint32(v)
}

// HilbertValue is the curve index of bbox b's centre within extent ext.
func HilbertValue(b, ext geom.BBox) uint32 {
	x := gridCell((b.MinX+b.MaxX)/2, ext.MinX, ext.MaxX-ext.MinX)
	y := gridCell((b.MinY+b.MaxY)/2, ext.MinY, ext.MaxY-ext.MinY)
	return hilbertXY(x, y)
}

// Extent is the union of the bboxes of feats that have coordinates.
func Extent(feats []Feature) geom.BBox {
	ext := geom.Empty
	for i := range feats {
		if !feats[i].Empty() {
			unionf(&ext, feats[i].BBox)
		}
	}
	return ext
}

// HilbertSort orders feats as a FlatGeobuf writer stores them: by the
// Hilbert index of their bbox centres over their extent, highest first.
// Features with equal indexes keep their order (GDAL's sort is not
// stable, so its order among them cannot be reproduced anyway).
func HilbertSort(feats []Feature) { hilbertSort(feats, nil) }

// hilbertSort is HilbertSort calling swap (when not nil) with each swap
// of two features, for a slice kept in step with feats.
func hilbertSort(feats []Feature, swap func(i, j int)) {
	ext := Extent(feats)
	hv := make([]uint32, len(feats))
	for i := range feats {
		hv[i] = HilbertValue(feats[i].BBox, ext)
	}
	sort.Stable(byHilbert{feats, hv, swap})
}

type byHilbert struct {
	f    []Feature
	h    []uint32
	swap func(i, j int)
}

func (s byHilbert) Len() int           { return len(s.f) }
func (s byHilbert) Less(i, j int) bool { return s.h[i] > s.h[j] }
func (s byHilbert) Swap(i, j int) {
	s.f[i], s.f[j] = s.f[j], s.f[i]
	s.h[i], s.h[j] = s.h[j], s.h[i]
	if s.swap != nil {
		s.swap(i, j)
	}
}
