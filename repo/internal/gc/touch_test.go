package gc

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/internal/azuritetest"
	"github.com/chunkvc/chunkvc/repo/internal/reach"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/azure"
)

// touchedAfterList is a store whose first List, once done, lets another
// process touch an object: a commit elsewhere reusing a chunk between
// gc's listing and its deletes.
type touchedAfterList struct {
	*azure.Store // every capability gc uses (Toucher, BulkRemover, Sweeper…)
	once         sync.Once
	touch        func()
}

func (s *touchedAfterList) List(ctx context.Context, fn func(store.Info) error) error {
	err := s.Store.List(ctx, fn)
	s.once.Do(s.touch)
	return err
}

// A packed object that another process touches after gc listed it as
// garbage (unreferenced, older than the grace period) is not deleted; the
// untouched garbage beside it is.
func TestTouchedSinceListingIsSpared(t *testing.T) {
	azuritetest.Start(t).Setenv(t)
	const url = "az://gcrun/touched"
	open := func() *azure.Store {
		s, err := azure.Open(t.Context(), url, azure.Options{CreateContainer: true})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	writer := open()
	b, err := writer.Batch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// The reused object packed; the garbage loose (a touch refreshes a
	// whole pack).
	reused, garbage := []byte("reused elsewhere"), []byte("garbage")
	ids := []hashing.ID{hashing.Sum(reused), hashing.Sum(garbage)}
	if _, err := b.Put(t.Context(), ids[0], reused, hashing.ID{}); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := store.Put(t.Context(), writer, ids[1], garbage); err != nil {
		t.Fatal(err)
	}
	gcStore := open()
	if _, err := gcStore.Stat(t.Context(), ids[0]); err != nil { // indexes loaded now
		t.Fatal(err)
	}
	// The service keeps whole seconds: past the grace period of 1 s, with
	// the touch in a later second than the pack's.
	time.Sleep(2500 * time.Millisecond)
	s := &touchedAfterList{Store: gcStore, touch: func() {
		if err := store.Touch(t.Context(), open(), ids[0]); err != nil {
			t.Errorf("touch: %v", err)
		}
	}}
	res, err := Run(t.Context(), Options{Grace: time.Second}, reach.Set{}, 0, []Target{{Name: "remote", Store: s}})
	if err != nil {
		t.Fatal(err)
	}
	check := open()
	if _, err := check.Stat(t.Context(), ids[0]); err != nil {
		t.Errorf("the object touched after gc's listing was deleted: %v (%+v)", err, res.Stores[0])
	}
	if ok, err := store.Has(t.Context(), check, ids[1]); err != nil || ok {
		t.Errorf("the untouched garbage: present %v, %v; want deleted", ok, err)
	}
}
