package azure_test

import (
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/azure"
)

// TestTouchSeenByOtherProcess: a packed object touched by one process (a
// commit reusing it) is young in the listing of another process that had
// loaded the pack indexes before the touch, as a gc there sees it: its
// grace period spares the object.
func TestTouchSeenByOtherProcess(t *testing.T) {
	startAzurite(t)
	const url = "az://touch/cross"
	writer := open(t, url, azure.Options{CreateContainer: true})
	data, id := object(7, 5000)
	b, err := writer.Batch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(t.Context(), id, data, hashing.ID{}); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, ok := writer.PackOf(id); !ok {
		t.Fatal("the object was not packed")
	}
	gc := open(t, url, azure.Options{})
	before := modifiedOf(t, gc, id)
	// The service keeps whole seconds: touch in a later one.
	time.Sleep(time.Until(before) + 100*time.Millisecond)
	touched := time.Now()
	if err := store.Touch(t.Context(), open(t, url, azure.Options{}), id); err != nil {
		t.Fatal(err)
	}
	after := modifiedOf(t, gc, id)
	if after.Before(touched) {
		t.Errorf("after a touch at %v elsewhere, the listing says modified %v (before the touch: %v): "+
			"a gc with a grace period ending between would delete it", touched, after, before)
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
