package storetest

import (
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
)

func sweeper(t *testing.T, s store.Store) store.Sweeper {
	t.Helper()
	sw, ok := s.(store.Sweeper)
	if !ok {
		t.Fatalf("%T does not implement store.Sweeper: what a killed batch leaves would stay for ever", s)
	}
	return sw
}

func sweep(t *testing.T, s store.Store, cutoff time.Time, dryRun bool) store.Debris {
	t.Helper()
	d, err := sweeper(t, s).Sweep(t.Context(), cutoff, dryRun)
	if err != nil {
		t.Fatalf("sweep (cutoff %v, dry run %v): %v", time.Until(cutoff).Round(time.Second), dryRun, err)
	}
	return d
}

// A clean store has no debris, and sweeping it, whatever the cutoff, keeps
// every object.
func testSweepKeepsObjects(t *testing.T, s store.Store, _ Footprint) {
	loose, _ := object(50, 5000)
	put(t, s, loose)
	var items []item
	var objs [][]byte
	for i := range 20 {
		data, _ := object(int64(51+i), 20000)
		objs = append(objs, data)
		items = append(items, item{data: data})
	}
	batchPut(t, s, items...)
	if d := sweep(t, s, time.Now().Add(time.Hour), false); d.Files != 0 {
		t.Errorf("a clean store swept: %+v, want nothing", d)
	}
	wantObject(t, s, "loose object after a sweep", loose)
	for _, data := range objs {
		wantObject(t, s, "batched object after a sweep", data)
	}
}

// A batch left neither committed nor aborted (its process killed) leaves
// debris a sweep past its age finds; a dry run counts the same as the real
// one, which leaves none. Objects the batch finished stay whole or absent,
// and putting them again works.
func testSweepAbandonedBatch(t *testing.T, s store.Store, _ Footprint) {
	b := startBatch(t, s)
	var objs [][]byte
	for i := range 30 {
		data, id := object(int64(80+i), 30000)
		objs = append(objs, data)
		if _, err := b.Put(t.Context(), id, data, hashing.ID{}); err != nil {
			t.Fatalf("batch put: %v", err)
		}
	}
	future := time.Now().Add(time.Hour)
	dry := sweep(t, s, future, true)
	real := sweep(t, s, future, false)
	if dry != real {
		t.Errorf("dry run found %+v, the sweep %+v", dry, real)
	}
	if again := sweep(t, s, future, false); again.Files != 0 {
		t.Errorf("a second sweep found %+v", again)
	}
	// The abandoned batch's commit fails or leaves every object readable.
	if err := b.Commit(t.Context()); err == nil {
		for _, data := range objs {
			wantObject(t, s, "object of a batch committed after its debris was swept", data)
		}
	}
	for _, data := range objs {
		id := hashing.Sum(data)
		if _, err := s.Stat(t.Context(), id); err == nil {
			wantObject(t, s, "object of an abandoned batch", data)
		}
	}
	var items []item
	for _, data := range objs {
		items = append(items, item{data: data})
	}
	batchPut(t, s, items...)
	for _, data := range objs {
		wantObject(t, s, "object put again after a sweep", data)
	}
}

// A sweep whose cutoff is before a batch started leaves it alone.
func testSweepSparesYoung(t *testing.T, s store.Store, _ Footprint) {
	b := startBatch(t, s)
	var objs [][]byte
	for i := range 30 {
		data, id := object(int64(120+i), 30000)
		objs = append(objs, data)
		if _, err := b.Put(t.Context(), id, data, hashing.ID{}); err != nil {
			t.Fatalf("batch put: %v", err)
		}
	}
	if d := sweep(t, s, time.Now().Add(-time.Hour), false); d.Files != 0 {
		t.Errorf("a sweep of debris older than an hour found %+v during a batch", d)
	}
	if err := b.Commit(t.Context()); err != nil {
		t.Fatalf("commit after a sweep: %v", err)
	}
	for _, data := range objs {
		wantObject(t, s, "object of a batch that a sweep spared", data)
	}
}
