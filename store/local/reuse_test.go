package local_test

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/local"
)

// TestFullPacksPublishedAtOnce: a batch publishes each pack as soon as it
// is full, so a batch whose process dies before Commit (here: left as it
// is) leaves those packs' objects readable, and a batch in a new process
// putting the same objects writes only the rest. Abort keeps published
// packs.
func TestFullPacksPublishedAtOnce(t *testing.T) {
	local.SetPackLimits(t, 64<<10, 32<<10)
	s := open(t)
	var objs [][]byte
	for i := range 100 {
		data, _ := object(int64(500+i), 4<<10)
		objs = append(objs, data)
	}
	b, err := s.Batch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, data := range objs {
		if _, err := b.Put(t.Context(), hashing.Sum(data), data, hashing.ID{}); err != nil {
			t.Fatal(err)
		}
	}
	idx := func() int {
		m, _ := filepath.Glob(filepath.Join(s.Root(), local.PackDir, "pack-*.idx"))
		return len(m)
	}
	for deadline := time.Now().Add(10 * time.Second); idx() < 6; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d packs published before Commit, want the 6 full ones", idx())
		}
	}
	// Another process (a new Store) retries the same objects.
	retry, err := local.Open(s.Root())
	if err != nil {
		t.Fatal(err)
	}
	b2, err := retry.Batch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	added := 0
	for _, data := range objs {
		a, err := b2.Put(t.Context(), hashing.Sum(data), data, hashing.ID{})
		if err != nil {
			t.Fatal(err)
		}
		if a {
			added++
		}
	}
	if err := b2.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Logf("the retry stored %d of %d objects; %d packs", added, len(objs), idx())
	if added == 0 || added > 15 {
		t.Errorf("the retry stored %d of %d objects, want only those of the pack not yet full", added, len(objs))
	}
	if err := b.Abort(); err != nil {
		t.Fatal(err)
	}
	other, err := local.Open(s.Root())
	if err != nil {
		t.Fatal(err)
	}
	for i, data := range objs {
		if got, err := store.ReadAll(t.Context(), other, hashing.Sum(data)); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("object %d after the retry and the abort: %v", i, err)
		}
	}
}
