package storetest

import (
	"context"
	"maps"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
)

// The optional capabilities (store.Connectioner, BatchStater, Toucher,
// Repacker) are checked through the package helpers, which use a store's
// own method when it has one and fall back otherwise: a store without them
// (store/mem) checks the fallbacks.

// Connections: a Connectioner states at least 1, the same every time, and
// the helper passes it on; without one the helper gives the default.
func testConnections(t *testing.T, s store.Store) {
	got := store.Connections(s)
	c, ok := s.(store.Connectioner)
	if !ok {
		if got != store.DefaultConnections {
			t.Errorf("Connections of a store stating none = %d, want %d", got, store.DefaultConnections)
		}
		return
	}
	n := c.Connections()
	if n < 1 {
		t.Errorf("%T.Connections() = %d, want at least 1", s, n)
	}
	if again := c.Connections(); again != n {
		t.Errorf("%T.Connections() = %d, then %d", s, n, again)
	}
	if n >= 1 && got != n {
		t.Errorf("store.Connections = %d, the store says %d", got, n)
	}
}

// HasMany answers for every id asked, repeats included, present or not,
// and fails rather than guess when it cannot tell.
func testHasMany(t *testing.T, s store.Store) {
	want := map[hashing.ID]bool{}
	var ids []hashing.ID
	for i := range 60 {
		data, id := object(int64(300+i), 100+i)
		if i%3 != 0 {
			put(t, s, data)
		}
		want[id] = i%3 != 0
		ids = append(ids, id)
	}
	ids = append(ids, ids[0], ids[1], ids[59]) // asked twice
	got, err := store.HasMany(t.Context(), s, ids)
	if err != nil {
		t.Fatalf("HasMany of %d ids: %v", len(ids), err)
	}
	if !maps.Equal(got, want) {
		wrong := 0
		for id, w := range want {
			if g, ok := got[id]; !ok || g != w {
				wrong++
			}
		}
		t.Errorf("HasMany: %d entries, %d of the %d ids wrong or missing", len(got), wrong, len(want))
	}
	if got, err := store.HasMany(t.Context(), s, nil); err != nil || len(got) != 0 {
		t.Errorf("HasMany of no ids: %v, %v; want nothing", got, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if got, err := store.HasMany(ctx, s, ids); err == nil {
		n := 0
		for _, ok := range got {
			if !ok {
				n++
			}
		}
		t.Errorf("HasMany with a cancelled context succeeded, %d ids reported missing; want an error", n)
	}
}

// Touch refreshes an object's age (where the store reports ages), keeps
// its bytes, is idempotent and concurrent, and refuses a missing object;
// without a Toucher the helper does nothing and succeeds.
func testTouch(t *testing.T, s store.Store) {
	ctx := t.Context()
	loose, looseID := object(400, 3000)
	put(t, s, loose)
	ids := []hashing.ID{looseID}
	objs := [][]byte{loose}
	if _, ok := s.(store.Batcher); ok {
		packed, packedID := object(401, 3000)
		batchPut(t, s, item{data: packed})
		ids = append(ids, packedID)
		objs = append(objs, packed)
	}
	_, missing := object(402, 10)
	if _, ok := s.(store.Toucher); !ok {
		for _, id := range append(ids, missing) {
			if err := store.Touch(ctx, s, id); err != nil {
				t.Errorf("Touch %s of a store that cannot touch: %v, want nil", id.Short(), err)
			}
		}
		return
	}
	const gap, slack = 250 * time.Millisecond, 100 * time.Millisecond
	time.Sleep(gap) // the objects' ages now differ from a fresh touch's
	start := time.Now()
	for _, id := range ids {
		for range 2 {
			if err := store.Touch(ctx, s, id); err != nil {
				t.Errorf("touch %s: %v", id.Short(), err)
			}
		}
		info, err := s.Stat(ctx, id)
		if err != nil {
			t.Errorf("stat %s after a touch: %v", id.Short(), err)
		} else if !info.Modified.IsZero() && info.Modified.Before(start.Add(-slack)) {
			t.Errorf("%s after a touch: modified %v before the touch at %v", id.Short(), info.Modified, start)
		}
	}
	for _, data := range objs {
		wantObject(t, s, "object after a touch", data)
	}
	wantNotFound(t, "touch", missing, store.Touch(ctx, s, missing))
	var g errgroup.Group
	for i := range 16 {
		g.Go(func() error { return store.Touch(ctx, s, ids[i%len(ids)]) })
	}
	if err := g.Wait(); err != nil {
		t.Errorf("concurrent touches: %v", err)
	}
}

// Repack keeps every object readable, with its bytes and an age no older,
// while readers read, and the store works as before after it: among
// deltas, a base deleted afterwards leaves the objects stored against it.
func testRepack(t *testing.T, s store.Store) {
	rp, ok := s.(store.Repacker)
	if !ok {
		t.Skipf("%T is not a store.Repacker", s)
	}
	ctx := t.Context()
	var objs [][]byte
	for i := range 3 {
		data, _ := object(int64(500+i), 2000)
		put(t, s, data)
		objs = append(objs, data)
	}
	var base, derived []byte
	if _, ok := s.(store.Batcher); ok {
		for i := range 40 { // many small batches: small packs, where packs are
			a, _ := object(int64(600+2*i), 1500)
			b, _ := object(int64(601+2*i), 1500)
			batchPut(t, s, item{data: a}, item{data: b})
			objs = append(objs, a, b)
		}
		base, _ = object(700, 40000)
		derived = edit(base, 100, 20, 1)
		batchPut(t, s, item{data: base})
		batchPut(t, s, item{data: derived, like: hashing.Sum(base)})
		objs = append(objs, base, derived)
	}
	want := map[hashing.ID]int64{}
	before := map[hashing.ID]time.Time{}
	for _, data := range objs {
		id := hashing.Sum(data)
		want[id] = int64(len(data))
		info, err := s.Stat(ctx, id)
		if err != nil {
			t.Fatalf("stat %s: %v", id.Short(), err)
		}
		before[id] = info.Modified
	}

	// Readers run through the repack.
	var done atomic.Bool
	var readers errgroup.Group
	for w := range 2 {
		readers.Go(func() error {
			for i := w; !done.Load() || i < len(objs); i += 2 {
				id := hashing.Sum(objs[i%len(objs)])
				if _, err := store.ReadAll(ctx, s, id); err != nil {
					return err
				}
			}
			return nil
		})
	}
	n, err := rp.Repack(ctx)
	done.Store(true)
	if err != nil {
		t.Fatalf("repack: %v", err)
	}
	if n < 0 {
		t.Errorf("repack merged %d files", n)
	}
	t.Logf("repack merged %d files", n)
	if err := readers.Wait(); err != nil {
		t.Errorf("read during a repack: %v", err)
	}
	for _, data := range objs {
		wantObject(t, s, "object after a repack", data)
		id := hashing.Sum(data)
		if info, err := s.Stat(ctx, id); err == nil && !before[id].IsZero() && info.Modified.Before(before[id]) {
			t.Errorf("%s after a repack: modified %v, older than its %v", id.Short(), info.Modified, before[id])
		}
	}
	wantListing(t, s, want)
	if _, err := rp.Repack(ctx); err != nil {
		t.Errorf("second repack: %v", err)
	}
	if base != nil {
		id := hashing.Sum(base)
		if err := s.Delete(ctx, id); err != nil {
			t.Fatalf("delete a delta base after a repack: %v", err)
		}
		delete(want, id)
		wantObject(t, s, "object stored against a base deleted after a repack", derived)
		wantListing(t, s, want)
	}
}
