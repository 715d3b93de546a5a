package faultsuite

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/internal/faultproxy"
	"github.com/chunkvc/chunkvc/store"
)

// batchObjects is how many objects each batch case puts: small ones, so
// that they all go into one pack uploaded in one request.
const batchObjects = 24

// batchCase is one fault on the requests of a batch's commit (its pack
// upload, its index write) or of another process reading its index.
type batchCase struct {
	name string
	// on: "pack" (writes of .pack), "index" (writes of .idx), "read"
	// (reads of .idx by a fresh store after the commit).
	on   string
	rule faultproxy.Rule
	// fails: the fault outlasts the retries, so Commit must fail (and a
	// retry once the faults stop must succeed); otherwise Commit must
	// succeed.
	fails bool
}

func batchCases() []batchCase {
	stall := faultproxy.Rule{Kind: faultproxy.Delay, Delay: time.Minute, Count: 1}
	return []batchCase{
		{name: "pack 503", on: "pack", rule: faultproxy.Rule{Kind: faultproxy.Error, Count: 2}},
		{name: "pack reset before", on: "pack", rule: faultproxy.Rule{Kind: faultproxy.ResetBefore, Count: 2}},
		{name: "pack reset after", on: "pack", rule: faultproxy.Rule{Kind: faultproxy.ResetAfter, Count: 2}},
		{name: "pack upload cut", on: "pack", rule: faultproxy.Rule{Kind: faultproxy.CutRequest, After: 50000, Count: 2}},
		{name: "pack stall", on: "pack", rule: stall},
		{name: "pack always 500", on: "pack", rule: faultproxy.Rule{Kind: faultproxy.Error, Status: 500}, fails: true},
		{name: "pack always cut", on: "pack", rule: faultproxy.Rule{Kind: faultproxy.CutRequest, After: 50000}, fails: true},
		{name: "index 500", on: "index", rule: faultproxy.Rule{Kind: faultproxy.Error, Status: 500, Count: 2}},
		{name: "index reset after", on: "index", rule: faultproxy.Rule{Kind: faultproxy.ResetAfter, Count: 2}},
		{name: "index upload cut", on: "index", rule: faultproxy.Rule{Kind: faultproxy.CutRequest, After: 100, Count: 2}},
		{name: "index stall", on: "index", rule: stall},
		{name: "index always 503", on: "index", rule: faultproxy.Rule{Kind: faultproxy.Error}, fails: true},
		{name: "index always reset after", on: "index", rule: faultproxy.Rule{Kind: faultproxy.ResetAfter}, fails: true},
		{name: "index read cut", on: "read", rule: faultproxy.Rule{Kind: faultproxy.Truncate, After: 100, Count: 2}},
		{name: "index read 500", on: "read", rule: faultproxy.Rule{Kind: faultproxy.Error, Status: 500, Count: 2}},
		{name: "index read stall", on: "read", rule: faultproxy.Rule{Kind: faultproxy.Delay, Delay: time.Minute, After: 100, Count: 1}},
	}
}

// faultsBatch commits a batch through each fault in turn, each in a
// store of its own: the store loses nothing. Either Commit succeeds and a
// fresh store (another process) lists and reads every object, or Commit
// fails, a fresh store still lists cleanly (no index half there, none
// naming a missing pack) and a retried batch succeeds.
func faultsBatch(t *testing.T, rig Rig, tune Tuning) {
	for i, c := range batchCases() {
		t.Run(c.name, func(t *testing.T) {
			prefix := fmt.Sprintf("batch/%d", i)
			rig.Proxy.Clear()
			s := rig.Open(t, prefix, tune)
			objs := batchSet(int64(1000 + 100*i))
			r := c.rule
			r.Match = rig.keyMatch(c.on)
			if c.on == "read" {
				if err := putBatch(t, s, objs); err != nil {
					t.Fatalf("commit without faults: %v", err)
				}
				h := rig.Proxy.Add(r)
				start := time.Now()
				checkStored(t, rig.Open(t, prefix, tune), objs)
				checkFired(t, h)
				checkBound(t, r, time.Since(start))
				return
			}
			h := rig.Proxy.Add(r)
			start := time.Now()
			err := putBatch(t, s, objs)
			checkFired(t, h)
			checkBound(t, r, time.Since(start))
			rig.Proxy.Clear()
			switch {
			case err == nil && c.fails:
				t.Fatal("commit succeeded with every request failing")
			case err != nil && !c.fails:
				t.Fatalf("commit through %d transient faults: %v", h.Fired(), err)
			case err != nil:
				if !strings.Contains(err.Error(), rig.Proxy.URL) {
					t.Errorf("commit error %q does not name %s", err, rig.Proxy.URL)
				}
				t.Logf("commit failed as it should: %v", err)
				// Nothing half there: a fresh store lists cleanly.
				if err := rig.Open(t, prefix, tune).List(t.Context(), func(store.Info) error { return nil }); err != nil {
					t.Fatalf("list after a failed commit: %v", err)
				}
				if err := putBatch(t, rig.Open(t, prefix, tune), objs); err != nil {
					t.Fatalf("retried commit: %v", err)
				}
			}
			checkStored(t, rig.Open(t, prefix, tune), objs)
		})
	}
}

// keyMatch matches the requests of case on: writes (PUT, POST) of a key
// ending in .pack or .idx, or GETs of one ending in .idx.
func (rig Rig) keyMatch(on string) func(*http.Request) bool {
	key := rig.Key
	if key == nil {
		key = func(r *http.Request) string { return r.URL.Path }
	}
	return func(r *http.Request) bool {
		k, write := key(r), r.Method == http.MethodPut || r.Method == http.MethodPost
		switch on {
		case "pack":
			return write && strings.HasSuffix(k, ".pack")
		case "index":
			return write && strings.HasSuffix(k, ".idx")
		default:
			return r.Method == http.MethodGet && strings.HasSuffix(k, ".idx")
		}
	}
}

// batchSet is batchObjects objects of 4 to 12 KiB.
func batchSet(seed int64) map[hashing.ID][]byte {
	objs := make(map[hashing.ID][]byte, batchObjects)
	for i := range batchObjects {
		data, id := Object(seed+int64(i), 4<<10+i*350)
		objs[id] = data
	}
	return objs
}

// putBatch puts objs through one batch of s and commits it; a failed
// Put or Commit aborts it.
func putBatch(t *testing.T, s store.Store, objs map[hashing.ID][]byte) error {
	t.Helper()
	bs, ok := s.(store.Batcher)
	if !ok {
		t.Fatalf("%s has no batches", s)
	}
	b, err := bs.Batch(t.Context())
	if err != nil {
		return err
	}
	for id, data := range objs {
		if _, err := b.Put(t.Context(), id, data, hashing.ID{}); err != nil {
			return errors.Join(err, b.Abort())
		}
	}
	return b.Commit(t.Context())
}

// checkStored checks that s lists exactly objs and reads each back exact.
func checkStored(t *testing.T, s store.Store, objs map[hashing.ID][]byte) {
	t.Helper()
	listed := make(map[hashing.ID]bool)
	if err := s.List(t.Context(), func(info store.Info) error {
		if _, ok := objs[info.ID]; !ok {
			return fmt.Errorf("listed %s, never put", info.ID.Short())
		}
		listed[info.ID] = true
		return nil
	}); err != nil {
		t.Fatalf("list: %v", err)
	}
	if len(listed) != len(objs) {
		t.Errorf("listed %d objects of %d committed", len(listed), len(objs))
	}
	for id, data := range objs {
		got, err := store.ReadAll(t.Context(), s, id)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read %s: %d bytes (equal %v), %v", id.Short(), len(got), bytes.Equal(got, data), err)
		}
	}
}

func checkFired(t *testing.T, h *faultproxy.Handle) {
	t.Helper()
	if h.Fired() == 0 {
		t.Errorf("no fault injected (%d requests matched)", h.Matched())
	}
	t.Logf("%d faults of %d matching requests", h.Fired(), h.Matched())
}

// stallBound bounds a call through one stall of a minute: the stalled
// request must be dropped after Tuning.Timeout (2 s) and retried, not
// waited out.
const stallBound = 30 * time.Second

func checkBound(t *testing.T, r faultproxy.Rule, took time.Duration) {
	t.Helper()
	if r.Kind == faultproxy.Delay && took > stallBound {
		t.Errorf("a stall of %v held the call for %v; want it dropped within %v", r.Delay, took, stallBound)
	}
}
