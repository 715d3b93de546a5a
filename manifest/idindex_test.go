package manifest

import (
	"math/rand"
	"testing"

	"github.com/chunkvc/chunkvc/hashing"
)

// randomChunks returns n chunks with random IDs, some of them repeated
// (one chunk under several keys) and some sharing their first 8 bytes
// with another ID but not the rest.
func randomChunks(n int, seed int64) []Chunk {
	rng := rand.New(rand.NewSource(seed))
	cs := make([]Chunk, n)
	for i := range cs {
		var id hashing.ID
		rng.Read(id[:])
		switch {
		case i > 0 && rng.Intn(10) == 0: // the same chunk again
			id = cs[rng.Intn(i)].ID
		case i > 0 && rng.Intn(10) == 0: // a prefix collision
			copy(id[:8], cs[rng.Intn(i)].ID[:8])
		case rng.Intn(50) == 0: // a collision in all but the last byte
			if i > 0 {
				id = cs[rng.Intn(i)].ID
				id[31] ^= byte(1 + rng.Intn(255))
			}
		}
		cs[i].ID = id
	}
	return cs
}

// IDIndex finds what a map from ID to first place finds, for IDs that are
// there (repeated, sharing a prefix) and IDs that are not (sharing a
// prefix with some that are).
func TestIDIndexAgreesWithMap(t *testing.T) {
	for _, n := range []int{0, 1, 2, 17, 5000} {
		cs := randomChunks(n, int64(n))
		first := map[hashing.ID]int{}
		for i, c := range cs {
			if _, ok := first[c.ID]; !ok {
				first[c.ID] = i
			}
		}
		x := NewIDIndex(cs)
		if x.Len() != n {
			t.Fatalf("n=%d: Len %d", n, x.Len())
		}
		for _, c := range cs {
			if at, ok := x.Find(c.ID); !ok || at != first[c.ID] {
				t.Fatalf("n=%d: Find(%s) = %d, %v; want %d", n, c.ID.Short(), at, ok, first[c.ID])
			}
			miss := c.ID
			miss[20] ^= 0x40 // same prefix, another ID
			if _, in := first[miss]; in {
				continue
			}
			if at, ok := x.Find(miss); ok {
				t.Fatalf("n=%d: Find of an absent ID with a known prefix gave place %d", n, at)
			}
		}
		var absent hashing.ID
		absent[0] = 0xff
		if _, in := first[absent]; !in {
			if _, ok := x.Find(absent); ok {
				t.Fatalf("n=%d: absent ID found", n)
			}
		}
	}
}

// BenchmarkIDIndexFind and BenchmarkIDMapFind compare a lookup in either.
func BenchmarkIDIndexFind(b *testing.B) {
	cs := randomChunks(500_000, 1)
	x := NewIDIndex(cs)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, ok := x.Find(cs[i%len(cs)].ID); !ok {
			b.Fatal("not found")
		}
	}
}

func BenchmarkIDMapFind(b *testing.B) {
	cs := randomChunks(500_000, 1)
	m := make(map[hashing.ID]int32, len(cs))
	for i, c := range cs {
		if _, ok := m[c.ID]; !ok {
			m[c.ID] = int32(i)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, ok := m[cs[i%len(cs)].ID]; !ok {
			b.Fatal("not found")
		}
	}
}
