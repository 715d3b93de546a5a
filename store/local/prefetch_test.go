package local_test

import (
	"math/rand"
	"os"
	"testing"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/internal/packidx"
)

// TestPrefetchedBase: a base read by PrefetchBase is the one the Put that
// names it encodes against. The base's bytes in its pack are damaged after
// the prefetch, so a Put that read them then would find them wrong and
// store its object whole; a second object, whose base was not prefetched,
// shows that.
func TestPrefetchedBase(t *testing.T) {
	s := open(t)
	rnd := rand.New(rand.NewSource(1))
	base := make([]byte, 64<<10) // random: stored raw, so damage shows
	rnd.Read(base)
	other := make([]byte, 64<<10)
	rnd.Read(other)
	ids := batch(t, s, base, other)
	edit := func(b []byte) []byte {
		out := append([]byte(nil), b...)
		rnd.Read(out[len(out)-1024:])
		return out
	}
	v2, o2 := edit(base), edit(other)

	b, err := s.Batch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	p, ok := b.(store.BasePrefetcher)
	if !ok {
		t.Fatal("the local store's batch does not prefetch bases")
	}
	p.PrefetchBase(t.Context(), ids[0])
	p.PrefetchBase(t.Context(), hashing.Sum([]byte("not stored"))) // a no-op
	for _, e := range packsOf(t, s) {
		rewritable(t, e.pack)
		f, err := os.OpenFile(e.pack, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte{0xff, 0x00, 0xff, 0x00}, e.Offset+100); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	for _, o := range []struct {
		data []byte
		like hashing.ID
	}{{v2, ids[0]}, {o2, ids[1]}} {
		if _, err := b.Put(t.Context(), hashing.Sum(o.data), o.data, o.like); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := packsOf(t, s)
	if e := got[hashing.Sum(v2)]; e.Encoding != packidx.Delta || e.Base != ids[0] {
		t.Fatalf("object whose base was prefetched: encoding %v against %s, want a delta against %s", e.Encoding, e.Base.Short(), ids[0].Short())
	}
	if e := got[hashing.Sum(o2)]; e.Encoding == packidx.Delta {
		t.Fatalf("object whose damaged base was read at its Put is a delta: the damage did not reach the store")
	}
}
