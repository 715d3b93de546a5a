package storetest

import (
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
)

// TouchAcross checks that a packed object touched by one process (a
// commit reusing it) is young in the listing of another that had loaded
// the pack indexes before the touch, as a gc there sees it, so that its
// grace period spares the object. open opens a store at one place, each
// call another process's view of it; the store must be a Batcher and a
// Toucher. Ages may be whole seconds: the touch waits for a later one.
//
// The same holds for an object a batch elsewhere puts again: the batch
// reuses it and must touch it.
func TouchAcross(t *testing.T, open func(t *testing.T) store.Store) {
	writer := open(t)
	data, id := object(700, 5000)
	reused, reusedID := object(701, 5000)
	batchPut(t, writer, item{data: data})
	batchPut(t, writer, item{data: reused}) // a pack of its own
	gc := open(t)
	before := modifiedOf(t, gc, id)
	time.Sleep(time.Until(before.Truncate(time.Second).Add(time.Second)) + 100*time.Millisecond)
	touched := time.Now()
	if err := store.Touch(t.Context(), open(t), id); err != nil {
		t.Fatal(err)
	}
	batchPut(t, open(t), item{data: reused})
	for what, id := range map[string]hashing.ID{"a touch": id, "a batch reusing it": reusedID} {
		if after := modifiedOf(t, gc, id); after.Before(touched.Truncate(time.Second)) {
			t.Errorf("after %s at %v elsewhere, the listing says modified %v (before: %v): "+
				"a gc with a grace period ending between would delete it", what, touched, after, before)
		}
	}
}

// modifiedOf is the age s's listing reports of id.
func modifiedOf(t *testing.T, s store.Store, id hashing.ID) time.Time {
	t.Helper()
	var mod time.Time
	err := s.List(t.Context(), func(i store.Info) error {
		if i.ID == id {
			mod = i.Modified
		}
		return nil
	})
	if err != nil || mod.IsZero() {
		t.Fatalf("list: %v (modified %v)", err, mod)
	}
	return mod
}
