package repo

import (
	"errors"
	"sort"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/blockcache"
	"github.com/chunkvc/chunkvc/repo/internal/derived"
)

// errChangedWhileRead: a derived segment's bytes differ between the read
// that checked them against their recipe and the scan.
var errChangedWhileRead = errors.New("file changed while it was being read")

// scanPlan is a file's layout as hashing.Scan reads it: the pieces the
// manifest's layout will have (adjacent inline segments merged, as
// manifest.Layout.Append merges them), a piece longer than the scan takes
// cut in parts of hashing.MaxRange from its start (as blockcache.LayoutPrints cuts
// inline pieces). It takes 32 bytes a part (two for most tiles: the tile
// and the few bytes GDAL writes between tiles), because a commit of a
// file of 500,000 tiles holds it whole. No part's ID is kept in it: a
// chunk's is in its manifest.Chunk, an inline part's is the hash of its
// bytes, which the plan holds (a few bytes between tiles, hashed again
// for the blocks' prints rather than kept at 32 bytes a part).
type scanPlan struct {
	ranges  []hashing.Range
	parts   []scanPart
	chunks  []manifest.Chunk // the manifest's chunks but aliases; the scan sets their IDs
	inline  []byte           // every inline part's bytes, at its scanPart.at, copied there by the scan
	recipes []string         // of derived pieces
	pieces  int              // how many pieces the parts are of
}

type partKind uint8

const (
	chunkPart partKind = iota
	inlinePart
	derivedPart
)

type scanPart struct {
	// at is, for a chunk, its index among the layout's chunks; for inline
	// bytes, where they go in scanPlan.inline; for a derived piece, its
	// recipe's index in scanPlan.recipes.
	at   int64
	part int32 // index of this part in its piece
	kind partKind
}

// first reports whether pt begins its piece.
func (pt *scanPart) first() bool { return pt.part == 0 }

// planScan returns the scan plan of segs, a checked layout's segments
// (none empty, chunks no longer than a scan piece), with the manifest's
// chunks (keys, sizes and bboxes; cap room for aliases more).
func planScan(segs []formats.Segment, aliases int) *scanPlan {
	pl := &scanPlan{ranges: make([]hashing.Range, 0, len(segs)), parts: make([]scanPart, 0, len(segs))}
	recipe := map[string]int64{}
	add := func(seg hashing.Range, pt scanPart) {
		pl.pieces++
		for off := seg.Off; off < seg.Off+seg.Len; off += hashing.MaxRange {
			n := min(hashing.MaxRange, seg.Off+seg.Len-off)
			pl.ranges = append(pl.ranges, hashing.Range{Off: off, Len: n})
			pl.parts = append(pl.parts, pt)
			pt.part++
			if pt.kind == inlinePart {
				pt.at += n
			}
		}
	}
	var inline int64
	nchunks := 0
	for i := 0; i < len(segs); i++ {
		s := segs[i]
		seg := hashing.Range{Off: s.Off, Len: s.Len}
		switch {
		case s.IsChunk():
			add(seg, scanPart{kind: chunkPart, at: int64(nchunks)})
			nchunks++
		case s.IsDerived():
			r, ok := recipe[s.Derive]
			if !ok {
				r = int64(len(pl.recipes))
				recipe[s.Derive] = r
				pl.recipes = append(pl.recipes, s.Derive)
			}
			add(seg, scanPart{kind: derivedPart, at: r})
		default:
			for i+1 < len(segs) && !segs[i+1].IsChunk() && !segs[i+1].IsDerived() {
				i++
				seg.Len = segs[i].Off + segs[i].Len - seg.Off
			}
			add(seg, scanPart{kind: inlinePart, at: inline})
			inline += seg.Len
		}
	}
	pl.inline = make([]byte, inline)
	pl.chunks = make([]manifest.Chunk, 0, nchunks+aliases)
	for _, s := range segs {
		if s.IsChunk() {
			pl.chunks = append(pl.chunks, manifest.Chunk{Key: s.Key, Size: s.Len, BBox: bbox(s.BBox)})
		}
	}
	return pl
}

// id returns the ID of part i, a chunk's or inline bytes', once the scan
// has given it.
func (pl *scanPlan) id(i int) hashing.ID {
	pt := &pl.parts[i]
	if pt.kind == chunkPart {
		return pl.chunks[pt.at].ID
	}
	return hashing.Sum(pl.inline[pt.at : pt.at+pl.ranges[i].Len])
}

// piece returns the range of the piece that part i is of.
func (pl *scanPlan) piece(i int) hashing.Range {
	first, last := i-int(pl.parts[i].part), i
	for last+1 < len(pl.parts) && pl.parts[last+1].part > 0 {
		last++
	}
	return hashing.Range{Off: pl.ranges[first].Off, Len: pl.ranges[last].Off + pl.ranges[last].Len - pl.ranges[first].Off}
}

// inlineBytes returns the bytes of the inline piece that begins at part i,
// once the scan has copied them.
func (pl *scanPlan) inlineBytes(i int) []byte {
	at := pl.parts[i].at
	return pl.inline[at : at+pl.piece(i).Len]
}

// print returns the fingerprint of block i of a size-byte file, as
// blockcache.LayoutPrints gives it for the layout built from the plan, once the scan
// has hashed every part over the block. A derived piece stands in the
// print whole, by its recorded hash (derived).
func (pl *scanPlan) print(i int, size int64, derived map[int64]derived.Hash) blockcache.Fingerprint {
	start, end := int64(i)*hashing.BlockLen, min(int64(i+1)*hashing.BlockLen, size)
	j := sort.Search(len(pl.ranges), func(k int) bool { return pl.ranges[k].Off+pl.ranges[k].Len > start })
	var ps []blockcache.Piece
	for k := j; k < len(pl.ranges) && pl.ranges[k].Off < end; k++ {
		if pl.parts[k].kind == derivedPart {
			if k > j && pl.parts[k].part > 0 {
				continue // the piece is in already
			}
			seg := pl.piece(k)
			ps = append(ps, blockcache.Piece{Off: seg.Off, Len: seg.Len, ID: derived[seg.Off].ID})
			continue
		}
		ps = append(ps, blockcache.Piece{Off: pl.ranges[k].Off, Len: pl.ranges[k].Len, ID: pl.id(k)})
	}
	return blockcache.BlockPrint(ps, start, end)
}

// prints returns the fingerprint of every block of a size-byte file, as
// blockcache.LayoutPrints gives them for the layout built from the plan. made, when
// not nil, holds those already made (by Scan's Reuse, once each block's
// pieces were done): only its zero entries are made here, in it.
func (pl *scanPlan) prints(size int64, derived map[int64]derived.Hash, made []blockcache.Fingerprint) []blockcache.Fingerprint {
	if size <= hashing.BlockLen {
		return nil
	}
	out := made
	if out == nil {
		out = make([]blockcache.Fingerprint, (size+hashing.BlockLen-1)/hashing.BlockLen)
	}
	for i := range out {
		if out[i] == (blockcache.Fingerprint{}) {
			out[i] = pl.print(i, size, derived)
		}
	}
	return out
}

// layout encodes the layout blob of a size-byte file from the plan, once
// the scan has given every part's ID and inline bytes; alias, when not
// nil, is called with every chunk's part.
func (pl *scanPlan) layout(size int64, derived map[int64]derived.Hash, alias func(i int)) ([]byte, error) {
	n := 64
	for i := range pl.parts {
		pt := &pl.parts[i]
		if !pt.first() {
			continue
		}
		switch rg := pl.piece(i); pt.kind {
		case inlinePart:
			n += manifest.PieceLen(rg.Len, "", int(rg.Len))
		case derivedPart:
			n += manifest.PieceLen(rg.Len, pl.recipes[pt.at], 0)
		default:
			n += manifest.PieceLen(rg.Len, "", 0)
		}
	}
	e := manifest.NewLayoutEncoder(size, pl.pieces, n)
	for i := range pl.parts {
		pt := &pl.parts[i]
		if !pt.first() {
			continue
		}
		switch pt.kind {
		case inlinePart:
			e.Inline(pl.inlineBytes(i))
		case derivedPart:
			rg := pl.piece(i)
			e.Derived(rg.Len, derived[rg.Off].ID, pl.recipes[pt.at])
		default:
			e.Chunk(pl.ranges[i].Len, pl.chunks[pt.at].ID)
			if alias != nil {
				alias(i)
			}
		}
	}
	return e.Bytes()
}
