package generic

import (
	"bytes"
	"context"
	"math/rand"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
	"github.com/chunkvc/chunkvc/geom"
	"github.com/chunkvc/chunkvc/hashing"
)

func random(n int, seed int64) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

func TestConformance(t *testing.T) {
	files := []formattest.File{
		{Name: "empty", Data: nil},
		{Name: "one", Data: []byte{1}},
		{Name: "max", Data: random(MaxSize, 1)},
		{Name: "max+1", Data: random(MaxSize+1, 2)},
		{Name: "5MiB", Data: random(5<<20, 3)},
		{Name: "zeros", Data: make([]byte, 3<<20)},
	}
	native := map[string]bool{}
	for _, f := range files {
		native[f.Name] = true
	}
	formattest.Run(t, Adapter{}, files, native)
	formattest.Run(t, Adapter{}, formattest.Corpus(t), nil)
}

func TestChunkSizesWithinBounds(t *testing.T) {
	data := random(16<<20, 4)
	l, err := formattest.Layout(Adapter{}, data)
	if err != nil {
		t.Fatal(err)
	}
	segs := l.Segments
	for i, s := range segs {
		if s.Len > MaxSize || (s.Len < MinSize && i != len(segs)-1) {
			t.Fatalf("chunk %d has %d bytes, outside %d..%d", i, s.Len, MinSize, MaxSize)
		}
	}
	avg := int64(len(data)) / int64(len(segs))
	if avg < NormalSize/2 || avg > NormalSize*2 {
		t.Fatalf("average chunk %d bytes, far from the normal %d", avg, NormalSize)
	}
}

// A 4 KiB edit in the middle of a 40 MB file changes only a few chunks.
func TestLocalEditStoresFewChunks(t *testing.T) {
	before := random(40<<20, 5)
	after := append([]byte(nil), before...)
	copy(after[20<<20:], random(4096, 6))
	changed := formattest.ChangedBytes(t, Adapter{}, before, after)
	if changed > 4*MaxSize {
		t.Fatalf("a 4 KiB overwrite changed %d chunk bytes (> %d)", changed, 4*MaxSize)
	}
	// An insertion shifts everything after it; CDC must resynchronise.
	ins := append(append(append([]byte(nil), before[:10<<20]...), random(1000, 7)...), before[10<<20:]...)
	if changed := formattest.ChangedBytes(t, Adapter{}, before, ins); changed > 4*MaxSize {
		t.Fatalf("a 1000-byte insert changed %d chunk bytes (> %d)", changed, 4*MaxSize)
	}
}

// The boundaries are pinned: if the library or the parameters change, chunk
// boundaries of every stored file change, which must be a deliberate
// adapter-version bump, not an accident.
func TestBoundariesPinned(t *testing.T) {
	data := random(2<<20, 42)
	l, err := formattest.Layout(Adapter{}, data)
	if err != nil {
		t.Fatal(err)
	}
	d := hashing.New()
	for _, s := range l.Segments {
		d.Write([]byte{byte(s.Len >> 16), byte(s.Len >> 8), byte(s.Len)})
	}
	const want = "61ff50c1f88d"
	if got := d.ID().Short(); got != want {
		t.Fatalf("boundary fingerprint %s, want %s (%d chunks)", got, want, len(l.Segments))
	}
}

func TestSplitRange(t *testing.T) {
	data := random(3<<20, 8)
	bb := &geom.BBox{MinX: 1, MinY: 2, MaxX: 3, MaxY: 4}
	segs, err := Split(context.Background(), bytes.NewReader(data), 1000, 2<<20, "tile/r1/c2", bb)
	if err != nil {
		t.Fatal(err)
	}
	pos := int64(1000)
	for _, s := range segs {
		if s.Off != pos || s.Key != "tile/r1/c2@" || s.BBox != bb {
			t.Fatalf("segment %+v at expected offset %d", s, pos)
		}
		pos += s.Len
	}
	if pos != 1000+2<<20 {
		t.Fatalf("split covers up to %d", pos)
	}
}

func FuzzLayout(f *testing.F) {
	f.Add([]byte{})
	f.Add(random(MaxSize+100, 1))
	f.Fuzz(func(t *testing.T, data []byte) { formattest.Fuzz(t, Adapter{}, data) })
}

func BenchmarkLayout(b *testing.B) {
	data := random(128<<20, 9)
	b.SetBytes(int64(len(data)))
	for i := 0; i < b.N; i++ {
		if _, err := formattest.Layout(Adapter{}, data); err != nil {
			b.Fatal(err)
		}
	}
}
