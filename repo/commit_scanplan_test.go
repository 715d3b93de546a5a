package repo

import (
	"bytes"
	"slices"
	"testing"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/blockcache"
	"github.com/chunkvc/chunkvc/repo/internal/derived"
)

// The prints a commit computes during its scan are those blockcache.LayoutPrints
// gives for the layout it then builds, also for an inline run and a
// derived segment longer than a scan piece, cut in parts.
func TestScanPlanPrints(t *testing.T) {
	const M = 1 << 20
	lens := []struct {
		n    int64
		kind string
	}{{M, "chunk"}, {10, "inline"}, {hashing.MaxRange + 3*M + 7, "inline"}, {2 * M, "chunk"}, {hashing.MaxRange + 5, "derived"}, {500 << 10, "chunk"}, {77, "inline"}}
	var segs []formats.Segment
	var size int64
	for i, l := range lens {
		s := formats.Segment{Off: size, Len: l.n}
		switch l.kind {
		case "chunk":
			s.Key = "c/" + string(rune('a'+i))
		case "derived":
			s.Derive = "recipe"
		}
		segs = append(segs, s)
		size += l.n
	}
	data := randomData(int(size), 11)
	pl := planScan(segs, 2)
	hashes := map[int64]derived.Hash{}
	for _, s := range segs {
		if s.IsDerived() {
			b := data[s.Off : s.Off+s.Len]
			h := derived.Hash{ID: hashing.Sum(b)}
			for at := int64(0); at < s.Len; at += hashing.MaxRange {
				h.Parts = append(h.Parts, hashing.Sum(b[at:min(at+hashing.MaxRange, s.Len)]))
			}
			hashes[s.Off] = h
		}
	}
	var chunkSegs []formats.Segment
	for _, s := range segs {
		if s.IsChunk() {
			chunkSegs = append(chunkSegs, s)
		}
	}
	var lay manifest.Layout
	for k, rg := range pl.ranges {
		if rg.Len > hashing.MaxRange {
			t.Fatalf("part %d is %d bytes", k, rg.Len)
		}
		b := data[rg.Off : rg.Off+rg.Len]
		pt := pl.parts[k]
		switch pt.kind {
		case inlinePart:
			copy(pl.inline[pt.at:], b)
			lay.Append(manifest.Piece{Len: rg.Len, Inline: b})
		case derivedPart:
			if pt.first() {
				seg := pl.piece(k)
				lay.Append(manifest.Piece{Len: seg.Len, Derive: pl.recipes[pt.at], ID: hashes[seg.Off].ID})
			}
		default:
			got := chunkSegs[pt.at]
			if got.Off != rg.Off || got.Len != rg.Len {
				t.Fatalf("part %d (%d+%d) names chunk %d (%d+%d)", k, rg.Off, rg.Len, pt.at, got.Off, got.Len)
			}
			c := &pl.chunks[pt.at]
			if c.Key != got.Key || c.Size != got.Len {
				t.Fatalf("chunk %d is %q of %d bytes, its segment %q of %d", pt.at, c.Key, c.Size, got.Key, got.Len)
			}
			c.ID = hashing.Sum(b) // as the scan gives it
			lay.Append(manifest.Piece{Len: rg.Len, Chunk: true, ID: c.ID})
		}
	}
	if lay.Len() != 6 || lay.Size != size || pl.pieces != 6 || len(pl.chunks) != 3 || cap(pl.chunks) != 5 {
		t.Fatalf("layout of %d pieces, %d bytes, plan of %d pieces, %d chunks; want 6 pieces (the inline runs merged), %d bytes, 3 chunks",
			lay.Len(), lay.Size, pl.pieces, len(pl.chunks), size)
	}
	prints := blockcache.LayoutPrints(&lay, size)
	for i := range prints {
		if got := pl.print(i, size, hashes); got != prints[i] || got == (blockcache.Fingerprint{}) {
			t.Fatalf("block %d: scan print %x, layout print %x", i, got, prints[i])
		}
	}
	if all := pl.prints(size, hashes, nil); !slices.Equal(all, prints) {
		t.Fatalf("plan prints differ from the layout's")
	}
	// Prints made during the scan are kept; the others are made.
	made := make([]blockcache.Fingerprint, len(prints))
	made[0] = blockcache.Fingerprint{1}
	if all := pl.prints(size, hashes, made); all[0] != made[0] || !slices.Equal(all[1:], prints[1:]) {
		t.Fatalf("plan prints with block 0's made: %x, want %x then the layout's", all, made[0])
	}
	var aliased []int64
	blob, err := pl.layout(size, hashes, func(i int) { aliased = append(aliased, pl.ranges[i].Off) })
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(blob, lay.Encode()) {
		t.Fatalf("the plan's layout blob differs from the layout's encoding")
	}
	if len(aliased) != 3 || aliased[0] != 0 || aliased[2] != segs[5].Off {
		t.Fatalf("chunk parts given for aliases at %v", aliased)
	}
	got, err := manifest.DecodeLayout(blob)
	if err != nil || !bytes.Equal(got.Piece(1).Inline, data[segs[1].Off:segs[3].Off]) {
		t.Fatalf("decoded plan layout: %v", err)
	}
}
