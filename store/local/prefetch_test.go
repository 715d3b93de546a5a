package local_test

import (
	"bytes"
	"math/rand"
	"os"
	"runtime"
	"testing"
	"time"

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

// openFiles counts the process's open file descriptors (Linux).
func openFiles(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}

// TestPackFilesShared: reads of a pack's objects share one open file, which
// stays open while the store is used and is closed once the store is gone;
// the objects read back whole through it.
func TestPackFilesShared(t *testing.T) {
	s := open(t)
	var objs [][]byte
	for i := range 40 {
		b := make([]byte, 3000+i)
		rand.New(rand.NewSource(int64(i))).Read(b)
		objs = append(objs, b)
	}
	ids := batch(t, s, objs...)
	before := openFiles(t)
	func() {
		s2 := reopen(t, s)
		for i, id := range ids {
			got, err := store.ReadAll(t.Context(), s2, id)
			if err != nil || !bytes.Equal(got, objs[i]) {
				t.Fatalf("object %d: %d bytes, %v", i, len(got), err)
			}
			if n := openFiles(t); n > before+2 { // the pack, and its index's mapping's file
				t.Fatalf("after %d reads of one pack, %d files open, were %d", i+1, n, before)
			}
		}
	}()
	for range 20 {
		runtime.GC()
		if openFiles(t) <= before {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%d files open after the store went, were %d", openFiles(t), before)
}
