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
// manifest.Layout.Append merges them), a piece longer than the scan takes
// cut in parts of hashing.MaxRange from its start (as layoutPrints cuts
// inline pieces).
type scanPlan struct {
	ranges []hashing.Range
	parts  []scanPart
	ids    []hashing.ID // per part, set by the scan before its blocks are asked about
}

type scanPart struct {
	seg    hashing.Range // the piece this part is of
	chunk  int           // index among the layout's chunks, when a chunk
	inline bool          // inline bytes
	derive string        // the recipe, when derived
	part   int           // index of this part in its piece
}

// first reports whether pt begins its piece.
func (pt *scanPart) first() bool { return pt.part == 0 }

// planScan returns the scan plan of segs, a checked layout's segments
// (none empty, chunks no longer than a scan piece).
func planScan(segs []formats.Segment) *scanPlan {
	pl := &scanPlan{ranges: make([]hashing.Range, 0, len(segs)), parts: make([]scanPart, 0, len(segs))}
	add := func(seg hashing.Range, pt scanPart) {
		pt.seg = seg
		for off := seg.Off; off < seg.Off+seg.Len; off += hashing.MaxRange {
			pl.ranges = append(pl.ranges, hashing.Range{Off: off, Len: min(hashing.MaxRange, seg.Off+seg.Len-off)})
			pl.parts = append(pl.parts, pt)
			pt.part++
		}
	}
	chunk := 0
	for i := 0; i < len(segs); i++ {
		s := segs[i]
		seg := hashing.Range{Off: s.Off, Len: s.Len}
		switch {
		case s.IsChunk():
			add(seg, scanPart{chunk: chunk})
			chunk++
		case s.IsDerived():
			add(seg, scanPart{derive: s.Derive})
		default:
			for i+1 < len(segs) && !segs[i+1].IsChunk() && !segs[i+1].IsDerived() {
				i++
				seg.Len = segs[i].Off + segs[i].Len - seg.Off
			}
			add(seg, scanPart{inline: true})
		}
	}
	pl.ids = make([]hashing.ID, len(pl.parts))
	return pl
}

// print returns the fingerprint of block i of a size-byte file, as
// layoutPrints gives it for the layout built from the plan, once the scan
// has hashed every part over the block. A derived piece stands in the
// print whole, by its recorded hash (derived).
func (pl *scanPlan) print(i int, size int64, derived map[int64]derivedHash) fingerprint {
	start, end := int64(i)*hashing.BlockLen, min(int64(i+1)*hashing.BlockLen, size)
	j := sort.Search(len(pl.ranges), func(k int) bool { return pl.ranges[k].Off+pl.ranges[k].Len > start })
	var ps []piece
	for k := j; k < len(pl.ranges) && pl.ranges[k].Off < end; k++ {
		pt := &pl.parts[k]
		if pt.derive != "" {
			if k > j && pl.parts[k-1].seg == pt.seg {
				continue // the piece is in already
			}
			ps = append(ps, piece{pt.seg.Off, pt.seg.Len, derived[pt.seg.Off].id})
			continue
		}
		ps = append(ps, piece{pl.ranges[k].Off, pl.ranges[k].Len, pl.ids[k]})
	}
	return blockPrint(ps, start, end)
}

// derivedHash is what checkDerived read of a derived segment: the hash of
// its bytes, and of each part the scan reads when it is longer than one.
type derivedHash struct {
	id    hashing.ID
	parts []hashing.ID
}
