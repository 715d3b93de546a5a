package repo

import (
	"errors"
	"sort"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/hashing"
)

// errChangedWhileRead: a derived segment's bytes differ between the read
// that checked them against their recipe and the scan.
var errChangedWhileRead = errors.New("file changed while it was being read")

// scanPlan is a file's layout as hashing.Scan reads it: the pieces the
// manifest's layout will have (adjacent inline segments merged, as
// manifest.Layout.Append merges them), an inline run longer than a scan
// piece may be cut in parts.
type scanPlan struct {
	ranges []hashing.Range
	parts  []scanPart
	ids    []hashing.ID // per part, set by the scan before its blocks are asked about
}

type scanPart struct {
	off    int64
	chunk  int    // index among the layout's chunks, when a chunk
	inline bool   // inline bytes
	derive string // the recipe, when derived
	cut    bool   // one of several parts of one inline run
}

// planScan returns the scan plan of segs, a checked layout's segments.
func planScan(segs []formats.Segment) *scanPlan {
	pl := &scanPlan{}
	add := func(off, n int64, pt scanPart) {
		pt.off = off
		pl.ranges = append(pl.ranges, hashing.Range{Off: off, Len: n})
		pl.parts = append(pl.parts, pt)
	}
	chunk := 0
	for i := 0; i < len(segs); i++ {
		s := segs[i]
		switch {
		case s.IsChunk():
			add(s.Off, s.Len, scanPart{chunk: chunk})
			chunk++
		case s.IsDerived():
			add(s.Off, s.Len, scanPart{derive: s.Derive})
		default:
			end := s.Off + s.Len
			for i+1 < len(segs) && !segs[i+1].IsChunk() && !segs[i+1].IsDerived() {
				i++
				end = segs[i].Off + segs[i].Len
			}
			cut := end-s.Off > hashing.MaxRange
			for off := s.Off; off < end; off += hashing.MaxRange {
				add(off, min(hashing.MaxRange, end-off), scanPart{inline: true, cut: cut})
			}
		}
	}
	pl.ids = make([]hashing.ID, len(pl.parts))
	return pl
}

// print returns the fingerprint of block i of a size-byte file, as
// blockPrints gives it for the layout built from the plan, once the scan
// has hashed every part over the block. ok is false for a block under an
// inline run the scan read in parts: its print needs the whole run's hash.
func (pl *scanPlan) print(i int, size int64) (fingerprint, bool) {
	start, end := int64(i)*hashing.BlockLen, min(int64(i+1)*hashing.BlockLen, size)
	j := sort.Search(len(pl.ranges), func(k int) bool { return pl.ranges[k].Off+pl.ranges[k].Len > start })
	var ps []piece
	for k := j; k < len(pl.ranges) && pl.ranges[k].Off < end; k++ {
		if pl.parts[k].cut {
			return fingerprint{}, false
		}
		ps = append(ps, piece{pl.ranges[k].Off, pl.ranges[k].Len, pl.ids[k]})
	}
	return blockPrint(ps, start, end), true
}
