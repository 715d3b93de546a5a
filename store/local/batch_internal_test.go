package local

import (
	"bytes"
	"math/rand"
	"testing"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
)

// A full pack, once published, lets its entries go: its index answers for
// its objects, which the batch still knows it put.
func TestBatchDropsPublishedEntries(t *testing.T) {
	SetPackLimits(t, 100<<10, 64<<10)
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sb, err := s.Batch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	b := sb.(*batch)
	var objs [][]byte
	for i := range 8 {
		data := make([]byte, 30000)
		rand.New(rand.NewSource(int64(i))).Read(data)
		objs = append(objs, data)
		if ok, err := b.Put(t.Context(), hashing.Sum(data), data, hashing.ID{}); err != nil || !ok {
			t.Fatalf("put %d: %v %v", i, ok, err)
		}
	}
	b.pubs.Wait()
	first := b.packs[0]
	if !first.published || first.pub == nil || first.entries.Len() != 0 {
		t.Fatalf("first pack: published %v, %d entries kept", first.published, first.entries.Len())
	}
	for i, data := range objs[:3] { // in the first pack
		id := hashing.Sum(data)
		if claimed, err := b.claim(id); err != nil || claimed {
			t.Errorf("object %d claimed again: %v %v", i, claimed, err)
		}
	}
	if err := b.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	for i, data := range objs {
		if got, err := store.ReadAll(t.Context(), s, hashing.Sum(data)); err != nil || !bytes.Equal(got, data) {
			t.Errorf("object %d: %d bytes, %v", i, len(got), err)
		}
	}
}
