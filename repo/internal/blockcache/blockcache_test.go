package blockcache

import (
	"bytes"
	"encoding/binary"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/chunkvc/chunkvc/hashing"
)

// TestQuickRecords: a table keeps each Quick once, with its length and
// ID, leaves out pieces shorter than minQuick (XXH3's short inputs have
// known collisions) and Quicks seen with two IDs, and finds a Quick only
// for its own length.
func TestQuickRecords(t *testing.T) {
	q := func(b byte) hashing.Quick { return hashing.Quick{b} }
	var s Set
	recs := &Records{seed: 9}
	recs.Put(q(5), 4096, hashing.ID{1})
	recs.Put(q(3), 2048, hashing.ID{2})
	recs.Put(q(5), 4096, hashing.ID{1})               // the same fact twice
	recs.Put(q(7), minQuick-1, hashing.ID{3})         // too short to trust
	recs.Put(q(9), hashing.MaxRange+1, hashing.ID{6}) // longer than a piece
	recs.Put(q(8), 4096, hashing.ID{4})
	recs.Put(q(8), 4096, hashing.ID{5}) // a collision: neither is kept
	recs.Put(q(2), 4096, hashing.ID{7})
	recs.Put(q(2), 4097, hashing.ID{7}) // a collision in length
	s.SetQuick(recs)
	if s.seed != 9 || len(s.quick) != 2*quickRecordLen {
		t.Fatalf("table under seed %d of %d bytes; want seed 9 and the two records that stand", s.seed, len(s.quick))
	}
	for _, c := range []struct {
		q    hashing.Quick
		n    int64
		want hashing.ID
		ok   bool
	}{
		{q(5), 4096, hashing.ID{1}, true},
		{q(3), 2048, hashing.ID{2}, true},
		{q(3), 2049, hashing.ID{}, false},
		{q(7), minQuick - 1, hashing.ID{}, false},
		{q(8), 4096, hashing.ID{}, false},
		{q(6), 4096, hashing.ID{}, false},
		{q(2), 4096, hashing.ID{}, false},
		{q(9), hashing.MaxRange + 1, hashing.ID{}, false},
	} {
		if id, ok := s.Known(c.q, c.n); ok != c.ok || id != c.want {
			t.Errorf("known(%x, %d) = %s, %v; want %s, %v", c.q[:1], c.n, id.Short(), ok, c.want.Short(), c.ok)
		}
	}
	if n := len(s.quick) / quickRecordLen; n != 2 {
		t.Errorf("%d records kept, want 2", n)
	}
	enc := encode(3<<20, &Set{Prints: make([]Fingerprint, 3), CVs: make([]hashing.CV, 3), seed: s.seed, quick: s.quick})
	d, err := decode(enc, 3<<20)
	if err != nil || d.seed != 9 || !bytes.Equal(d.quick, s.quick) {
		t.Fatalf("round trip: seed %d, %v", d.seed, err)
	}
}

func TestBlockPrints(t *testing.T) {
	const B = hashing.BlockLen
	id := func(b byte) hashing.ID { return hashing.ID{b} }
	pieces := []Piece{{0, 100, id(1)}, {100, B - 100, id(2)}, {B, B + 10, id(3)}, {2*B + 10, 50, id(4)}}
	size := int64(2*B + 60)
	p := blockPrints(pieces, size)
	if len(p) != 3 {
		t.Fatalf("%d prints for 3 blocks", len(p))
	}
	for i, fp := range p {
		if fp == (Fingerprint{}) {
			t.Errorf("block %d: no print", i)
		}
	}
	// A change in a piece that spans blocks 1 and 2 changes both prints,
	// and only them.
	changed := append([]Piece(nil), pieces...)
	changed[2].ID = id(9)
	q := blockPrints(changed, size)
	if q[0] != p[0] || q[1] == p[1] || q[2] == p[2] {
		t.Errorf("piece over blocks 1-2 changed: prints equal %v %v %v", q[0] == p[0], q[1] == p[1], q[2] == p[2])
	}
	// A gap leaves the block without a print.
	gap := []Piece{{0, 100, id(1)}, {200, 2*B - 140, id(2)}}
	if g := blockPrints(gap, size); g[0] != (Fingerprint{}) || g[1] == (Fingerprint{}) {
		t.Errorf("gap in block 0: prints %x %x", g[0], g[1])
	}
}

// goldenSet is the set of testdata/blocks-v2, an entry for a file of
// goldenSize bytes that the binary of commit 5b1e54c wrote (before the
// cache left package repo).
func goldenSet() *Set {
	rng := rand.New(rand.NewSource(5))
	s := &Set{Gen: 3, Prints: make([]Fingerprint, 3), CVs: make([]hashing.CV, 3)}
	for i := range 3 {
		rng.Read(s.Prints[i][:])
		rng.Read(s.CVs[i][:])
	}
	recs := NewRecords(0x0123456789abcdef, 0)
	for i := range 5 {
		var q hashing.Quick
		rng.Read(q[:])
		var id hashing.ID
		rng.Read(id[:])
		recs.Put(q, int64(minQuick+i*1000), id)
	}
	s.SetQuick(recs)
	return s
}

const goldenSize = 2<<20 + 5

// TestBlocksGolden: an entry written by an earlier binary is read, and
// the same set encodes to the same bytes.
func TestBlocksGolden(t *testing.T) {
	old, err := os.ReadFile(filepath.Join("testdata", "blocks-v2"))
	if err != nil {
		t.Fatal(err)
	}
	want := goldenSet()
	got, err := decode(old, goldenSize)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("old entry decoded as %+v, %v", got, err)
	}
	if len(got.quick) != 5*quickRecordLen {
		t.Fatalf("old entry has %d bytes of quick records, want 5 records", len(got.quick))
	}
	if !bytes.Equal(encode(goldenSize, want), old) {
		t.Fatal("the same set encodes to other bytes than the old binary wrote")
	}
}

// FuzzDecodeBlocks decodes entries whose checksum is right (body, then its
// BLAKE3), so that mutations reach the parser; raw also tries data as is.
func FuzzDecodeBlocks(f *testing.F) {
	s := &Set{Prints: make([]Fingerprint, 3), CVs: make([]hashing.CV, 3)}
	s.Prints[1][0], s.CVs[2][5] = 1, 2
	body := func(e []byte) []byte { return e[:len(e)-32] }
	f.Add(body(encode(2<<20+5, s)), int64(2<<20+5), false)
	recs := &Records{seed: 7}
	recs.Put(hashing.Quick{2}, 40<<10, hashing.ID{3})
	recs.Put(hashing.Quick{1}, minQuick, hashing.ID{4})
	s.SetQuick(recs)
	f.Add(body(encode(2<<20+5, s)), int64(2<<20+5), false)
	f.Add(encode(2<<20+5, s), int64(2<<20+5), true)
	f.Add([]byte(blocksMagic), int64(0), false)
	if old, err := os.ReadFile(filepath.Join("testdata", "blocks-v2")); err == nil {
		f.Add(old[:len(old)-32], int64(goldenSize), false)
		f.Add(old, int64(goldenSize), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, size int64, raw bool) {
		if !raw {
			sum := hashing.Sum(data)
			data = append(data[:len(data):len(data)], sum[:]...)
		}
		s, err := decode(data, size)
		if err != nil {
			return
		}
		if len(s.CVs) != len(s.Prints) || int64(len(s.CVs)) != (size+hashing.BlockLen-1)/hashing.BlockLen {
			t.Fatalf("decoded %d CVs and %d prints for size %d", len(s.CVs), len(s.Prints), size)
		}
		if !bytes.Equal(encode(size, s), data) {
			t.Fatal("decoded entry does not encode to its bytes")
		}
		if again, err := decode(encode(size, s), size); err != nil || !reflect.DeepEqual(again, s) {
			t.Fatalf("re-encoded entry decodes to another set (%v)", err)
		}
		for i := 0; i < len(s.quick); i += quickRecordLen {
			rec := s.quick[i : i+quickRecordLen]
			n := int64(binary.LittleEndian.Uint32(rec[16:]))
			if id, ok := s.Known(hashing.Quick(rec[:16]), n); !ok || id != hashing.ID(rec[20:]) {
				t.Fatalf("quick record %d not found by known", i/quickRecordLen)
			}
			if _, ok := s.Known(hashing.Quick(rec[:16]), n+1); ok {
				t.Fatalf("quick record %d found for another length", i/quickRecordLen)
			}
		}
	})
}

// allAtOnce is how prints were computed before the printer: every piece
// in a slice, each block's overlapping run found by two indexes.
func allAtOnce(pieces []Piece, size int64) []Fingerprint {
	n := (size + hashing.BlockLen - 1) / hashing.BlockLen
	out := make([]Fingerprint, n)
	j := 0
	for b := range n {
		start, end := b*hashing.BlockLen, min((b+1)*hashing.BlockLen, size)
		for j < len(pieces) && pieces[j].Off+pieces[j].Len <= start {
			j++
		}
		k := j
		for k < len(pieces) && pieces[k].Off < end {
			k++
		}
		out[b] = BlockPrint(pieces[j:k], start, end)
	}
	return out
}

// The printer, fed a piece at a time, gives the prints of the whole slice
// at once: pieces within a block, across several, gaps and a short tail.
func TestPrinterMatchesAllAtOnce(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for round := range 300 {
		var pieces []Piece
		var off int64
		for len(pieces) < 1+rng.Intn(60) {
			var n int64
			switch rng.Intn(4) {
			case 0:
				n = 1 + rng.Int63n(3*hashing.BlockLen)
			default:
				n = 1 + rng.Int63n(hashing.BlockLen/8)
			}
			if rng.Intn(20) == 0 {
				off += 1 + rng.Int63n(1000) // a gap
			}
			pieces = append(pieces, Piece{off, n, hashing.ID{byte(rng.Intn(256)), byte(round)}})
			off += n
		}
		size := off + rng.Int63n(2)*rng.Int63n(hashing.BlockLen) // sometimes uncovered at the end
		want := allAtOnce(pieces, size)
		got := blockPrints(pieces, size)
		if len(got) != len(want) {
			t.Fatalf("round %d: %d prints, want %d", round, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("round %d: block %d print differs", round, i)
			}
		}
	}
}
