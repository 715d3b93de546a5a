package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
)

func testRoundTrip(t *testing.T, s store.Store) {
	if s.String() == "" {
		t.Error("String() is empty")
	}
	for _, n := range []int{0, 1, 4093, 5 << 20} {
		data, id := object(int64(n), n)
		orig := bytes.Clone(data)
		put(t, s, data)
		for i := range data { // the store must not keep the caller's buffer
			data[i] ^= 0xff
		}
		if got, err := get(t, s, id, 0, -1); err != nil || !bytes.Equal(got, orig) {
			t.Errorf("get %d-byte object: %d bytes, %v; want the bytes put", n, len(got), err)
		}
		if got, err := store.ReadAll(t.Context(), s, id); err != nil || !bytes.Equal(got, orig) {
			t.Errorf("ReadAll %d-byte object: %d bytes, %v; want the bytes put", n, len(got), err)
		}
		if info, err := s.Stat(t.Context(), id); err != nil || info.ID != id || info.Size != int64(n) {
			t.Errorf("stat %d-byte object: %+v, %v; want size %d", n, info, err, n)
		} else if !info.Modified.IsZero() && (info.Modified.Before(time.Now().Add(-time.Hour)) || info.Modified.After(time.Now().Add(time.Hour))) {
			t.Errorf("stat %d-byte object: modified %v, not about now", n, info.Modified)
		}
		if ok, err := store.Has(t.Context(), s, id); !ok || err != nil {
			t.Errorf("Has %d-byte object = %v, %v; want true", n, ok, err)
		}
	}
}

func testRanges(t *testing.T, s store.Store) {
	data, id := object(1, 1000)
	put(t, s, data)
	empty := put(t, s, nil)
	for _, r := range [][2]int64{
		{0, -1}, {0, 1000}, {100, 200}, {900, -1}, {999, 1}, {500, 0}, {0, 0}, {1000, 0}, {1000, -1},
	} {
		want := data[r[0]:]
		if r[1] >= 0 {
			want = want[:r[1]]
		}
		if got, err := get(t, s, id, r[0], r[1]); err != nil || !bytes.Equal(got, want) {
			t.Errorf("get(off %d, length %d) of 1000 bytes: %d bytes, %v; want %d bytes of the object",
				r[0], r[1], len(got), err, len(want))
		}
	}
	for _, r := range [][2]int64{{0, 0}, {0, -1}} {
		if got, err := get(t, s, empty, r[0], r[1]); err != nil || len(got) != 0 {
			t.Errorf("get(off %d, length %d) of empty object: %d bytes, %v; want none", r[0], r[1], len(got), err)
		}
	}
	for _, c := range []struct {
		id          hashing.ID
		size        int
		off, length int64
	}{
		{id, 1000, 1001, -1}, {id, 1000, 1001, 0}, {id, 1000, 999, 2}, {id, 1000, 0, 1001},
		{id, 1000, 5000, 10}, {id, 1000, -1, 10}, {empty, 0, 1, -1}, {empty, 0, 0, 1},
	} {
		got, err := get(t, s, c.id, c.off, c.length)
		if err == nil {
			t.Errorf("get(off %d, length %d) of %d bytes: %d bytes, want an error", c.off, c.length, c.size, len(got))
		} else if errors.Is(err, store.ErrNotFound) {
			t.Errorf("get(off %d, length %d) of %d bytes: %v; a bad range is not ErrNotFound", c.off, c.length, c.size, err)
		}
	}
}

func testMissing(t *testing.T, s store.Store) {
	put(t, s, []byte("present"))
	id := hashing.Sum([]byte("never stored"))
	_, err := s.Stat(t.Context(), id)
	wantNotFound(t, "stat", id, err)
	_, err = get(t, s, id, 0, -1)
	wantNotFound(t, "get", id, err)
	_, err = get(t, s, id, 5, 10)
	wantNotFound(t, "ranged get", id, err)
	_, err = store.ReadAll(t.Context(), s, id)
	wantNotFound(t, "ReadAll", id, err)
	wantNotFound(t, "Verify", id, store.Verify(t.Context(), s, id, 0, true))
	if ok, err := store.Has(t.Context(), s, id); ok || err != nil {
		t.Errorf("Has(missing) = %v, %v; want false, nil", ok, err)
	}
}

func testIdempotent(t *testing.T, s store.Store) {
	data, id := object(2, 3000)
	for i := 0; i < 3; i++ {
		if err := store.Put(t.Context(), s, id, bytes.Clone(data)); err != nil {
			t.Fatalf("put #%d of the same object: %v", i+1, err)
		}
	}
	if got, err := store.ReadAll(t.Context(), s, id); err != nil || !bytes.Equal(got, data) {
		t.Errorf("ReadAll after repeated puts: %d bytes, %v", len(got), err)
	}
	wantListing(t, s, map[hashing.ID]int64{id: 3000})
}

func testConcurrent(t *testing.T, s store.Store) {
	const n = 16
	shared, sharedID := object(3, 1<<20)
	want := map[hashing.ID]int64{sharedID: 1 << 20}
	own := make([][]byte, n)
	for i := range own {
		var id hashing.ID
		own[i], id = object(int64(100+i), 64<<10+i)
		want[id] = int64(len(own[i]))
	}
	// A reader racing the writers sees the whole shared object or none.
	stop, watched := make(chan struct{}), make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				watched <- nil
				return
			default:
			}
			got, err := store.ReadAll(t.Context(), s, sharedID)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				watched <- fmt.Errorf("reading while others put: %w", err)
				return
			}
			if err == nil && !bytes.Equal(got, shared) {
				watched <- fmt.Errorf("reading while others put: got %d wrong bytes", len(got))
				return
			}
		}
	}()
	g, ctx := errgroup.WithContext(t.Context())
	for i := 0; i < n; i++ {
		g.Go(func() error {
			for _, data := range [][]byte{shared, own[i]} {
				id := hashing.Sum(data)
				if err := store.Put(ctx, s, id, data); err != nil {
					return err
				}
				got, err := store.ReadAll(ctx, s, id)
				if err != nil {
					return fmt.Errorf("read back after put: %w", err)
				}
				if !bytes.Equal(got, data) {
					return fmt.Errorf("read back %s after put: wrong bytes", id.Short())
				}
			}
			return nil
		})
	}
	err := g.Wait()
	close(stop)
	if err != nil {
		t.Errorf("concurrent puts: %v", err)
	}
	if err := <-watched; err != nil {
		t.Error(err)
	}
	wantListing(t, s, want)
}

func testList(t *testing.T, s store.Store) {
	wantListing(t, s, map[hashing.ID]int64{})
	want := map[hashing.ID]int64{}
	for i := 0; i < 40; i++ {
		data, _ := object(int64(1000+i), i*37)
		want[put(t, s, data)] = int64(len(data))
	}
	wantListing(t, s, want)

	stopErr, calls := errors.New("stop here"), 0
	err := s.List(t.Context(), func(store.Info) error { calls++; return stopErr })
	if !errors.Is(err, stopErr) || calls != 1 {
		t.Errorf("List with fn failing at once: %d calls, err %v; want 1 call and fn's error", calls, err)
	}
}

func testDelete(t *testing.T, s store.Store) {
	ctx := t.Context()
	a, aID := object(4, 2000)
	b, bID := object(5, 10)
	put(t, s, a)
	put(t, s, b)
	if err := s.Delete(ctx, aID); err != nil {
		t.Fatalf("delete: %v", err)
	}
	_, err := s.Stat(ctx, aID)
	wantNotFound(t, "stat after delete", aID, err)
	_, err = get(t, s, aID, 0, -1)
	wantNotFound(t, "get after delete", aID, err)
	if got, err := store.ReadAll(ctx, s, bID); err != nil || !bytes.Equal(got, b) {
		t.Errorf("deleting one object damaged another: %d bytes, %v", len(got), err)
	}
	for _, id := range []hashing.ID{aID, hashing.Sum([]byte("never stored"))} {
		if err := s.Delete(ctx, id); err != nil {
			t.Errorf("delete missing %s: %v, want nil", id.Short(), err)
		}
	}
	wantListing(t, s, map[hashing.ID]int64{bID: 10})
	put(t, s, a)
	if got, err := store.ReadAll(ctx, s, aID); err != nil || !bytes.Equal(got, a) {
		t.Errorf("put after delete: %d bytes, %v", len(got), err)
	}
}

func testPutChecksID(t *testing.T, s store.Store) {
	data := []byte("these bytes")
	wrong := hashing.Sum([]byte("other bytes"))
	wantCorrupt(t, "store.Put under the wrong ID", store.Put(t.Context(), s, wrong, data))
	for _, id := range []hashing.ID{wrong, hashing.Sum(data)} {
		_, err := s.Stat(t.Context(), id)
		wantNotFound(t, "stat after rejected put", id, err)
	}
	wantListing(t, s, map[hashing.ID]int64{})
}

// putMislabeled stores data under a wrong ID, bypassing store.Put. A store
// may refuse (ErrCorrupt); then it reports false.
func putMislabeled(t *testing.T, s store.Store, data []byte) (hashing.ID, bool) {
	t.Helper()
	id := hashing.Sum(append([]byte("not "), data...))
	err := s.Put(t.Context(), id, data)
	if errors.Is(err, store.ErrCorrupt) {
		t.Logf("store refuses mislabeled bytes: %v", err)
		return id, false
	}
	if err != nil {
		t.Fatalf("put mislabeled bytes: %v", err)
	}
	return id, true
}

func testReadAllVerifies(t *testing.T, s store.Store) {
	data, _ := object(6, 5000)
	id, ok := putMislabeled(t, s, data)
	if !ok {
		return
	}
	got, err := store.ReadAll(t.Context(), s, id)
	wantCorrupt(t, "ReadAll of mislabeled bytes", err)
	if got != nil {
		t.Errorf("ReadAll of mislabeled bytes returned %d bytes", len(got))
	}
}

func testVerify(t *testing.T, s store.Store) {
	ctx := t.Context()
	data, id := object(7, 777)
	put(t, s, data)
	for _, full := range []bool{false, true} {
		if err := store.Verify(ctx, s, id, 777, full); err != nil {
			t.Errorf("Verify(full=%v) of a good object: %v", full, err)
		}
		for _, size := range []int64{776, 778, 0} {
			wantCorrupt(t, fmt.Sprintf("Verify(size %d, full=%v) of 777 bytes", size, full),
				store.Verify(ctx, s, id, size, full))
		}
	}
	bad, ok := putMislabeled(t, s, data)
	if !ok {
		return
	}
	if err := store.Verify(ctx, s, bad, 777, false); err != nil {
		t.Errorf("Verify(size only) of mislabeled bytes of the right size: %v, want nil", err)
	}
	wantCorrupt(t, "Verify(full) of mislabeled bytes", store.Verify(ctx, s, bad, 777, true))
}

// testVerifyMany checks store.VerifyMany (and so the store's Confirm, if it
// has one) on objects put loose and, when the store batches, in a batch.
func testVerifyMany(t *testing.T, s store.Store) {
	ctx := t.Context()
	var want []store.Sized // the first loose, the last batched if the store batches
	for i := range 3 {
		data, _ := object(int64(300+i), 1000+i)
		id := put(t, s, data)
		want = append(want, store.Sized{ID: id, Size: int64(len(data))})
	}
	if bs, ok := s.(store.Batcher); ok {
		b, err := bs.Batch(ctx)
		if err != nil {
			t.Fatalf("Batch: %v", err)
		}
		for i := range 20 {
			data, id := object(int64(400+i), 2000+i)
			if _, err := b.Put(ctx, id, data, hashing.ID{}); err != nil {
				t.Fatalf("batch Put: %v", err)
			}
			want = append(want, store.Sized{ID: id, Size: int64(len(data))})
		}
		if err := b.Commit(ctx); err != nil {
			t.Fatalf("batch Commit: %v", err)
		}
	}
	for _, full := range []bool{false, true} {
		if err := store.VerifyMany(ctx, s, want, full); err != nil {
			t.Errorf("VerifyMany(full=%v) of %d good objects: %v", full, len(want), err)
		}
	}
	for _, i := range []int{0, len(want) - 1} {
		wrong := slices.Clone(want)
		wrong[i].Size++
		wantCorrupt(t, fmt.Sprintf("VerifyMany with the size of %s off by one", want[i].ID.Short()), store.VerifyMany(ctx, s, wrong, false))
	}
	_, missing := object(499, 10)
	absent := append(slices.Clone(want), store.Sized{ID: missing, Size: 10})
	if err := store.VerifyMany(ctx, s, absent, false); !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), missing.Short()) {
		t.Errorf("VerifyMany with a missing object: %v, want ErrNotFound naming %s", err, missing.Short())
	}
}
