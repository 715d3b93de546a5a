// Package storetest is the conformance suite every store.Store passes. It
// uses only the Store interface: no file system is assumed, listings may
// come in any order and may lag behind writes (they are retried for a
// while), and each subtest opens its own store.
package storetest

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
)

// listWait bounds how long a listing may lag behind writes and deletes.
var listWait = 10 * time.Second

// Run runs the suite. open must return a new, empty store each time it is
// called, and register any cleanup with t.Cleanup.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, store.Store)
	}{
		{"RoundTrip", testRoundTrip},
		{"Ranges", testRanges},
		{"Missing", testMissing},
		{"Idempotent", testIdempotent},
		{"Concurrent", testConcurrent},
		{"List", testList},
		{"Delete", testDelete},
		{"PutChecksID", testPutChecksID},
		{"ReadAllVerifies", testReadAllVerifies},
		{"Verify", testVerify},
		{"VerifyMany", testVerifyMany},
		{"Registry", testRegistry},
		{"Connections", testConnections},
		{"HasMany", testHasMany},
		{"Touch", testTouch},
		{"Repack", testRepack},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

// object returns n pseudo-random bytes from seed and their ID.
func object(seed int64, n int) ([]byte, hashing.ID) {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b, hashing.Sum(b)
}

// put stores data with store.Put and returns its ID.
func put(t *testing.T, s store.Store, data []byte) hashing.ID {
	t.Helper()
	id := hashing.Sum(data)
	if err := store.Put(t.Context(), s, id, data); err != nil {
		t.Fatalf("put %d bytes: %v", len(data), err)
	}
	return id
}

// get reads a range; an error from Get is returned, any later one is fatal.
func get(t *testing.T, s store.Store, id hashing.ID, off, length int64) ([]byte, error) {
	t.Helper()
	rc, err := s.Get(t.Context(), id, off, length)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("get %s [%d,%d): read: %v", id.Short(), off, length, err)
	}
	if err := rc.Close(); err != nil {
		t.Fatalf("get %s [%d,%d): close: %v", id.Short(), off, length, err)
	}
	return b, nil
}

// wantNotFound fails unless err wraps store.ErrNotFound and names id.
func wantNotFound(t *testing.T, what string, id hashing.ID, err error) {
	t.Helper()
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("%s of missing %s: err = %v, want ErrNotFound", what, id.Short(), err)
	} else if !strings.Contains(err.Error(), id.Short()) {
		t.Errorf("%s of missing %s: error %q does not name the object", what, id.Short(), err)
	}
}

// wantCorrupt fails unless err wraps store.ErrCorrupt.
func wantCorrupt(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("%s: err = %v, want ErrCorrupt", what, err)
	}
}

// wantListing fails unless List reports exactly want (ID → size), each once,
// within listWait.
func wantListing(t *testing.T, s store.Store, want map[hashing.ID]int64) {
	t.Helper()
	var problem string
	for deadline := time.Now().Add(listWait); ; time.Sleep(100 * time.Millisecond) {
		got := map[hashing.ID]int64{}
		problem = ""
		err := s.List(t.Context(), func(info store.Info) error {
			if _, dup := got[info.ID]; dup {
				problem = fmt.Sprintf("listed %s twice", info.ID.Short())
			}
			got[info.ID] = info.Size
			return nil
		})
		switch {
		case err != nil:
			t.Fatalf("list: %v", err)
		case problem == "" && !maps.Equal(got, want):
			problem = fmt.Sprintf("listed %d objects, want %d%s", len(got), len(want), diff(got, want))
		}
		if problem == "" || time.Now().After(deadline) {
			break
		}
	}
	if problem != "" {
		t.Errorf("%s after %v", problem, listWait)
	}
}

// diff describes up to 6 differences between two listings.
func diff(got, want map[hashing.ID]int64) string {
	var out []string
	for id, n := range got {
		if w, ok := want[id]; !ok || w != n {
			out = append(out, fmt.Sprintf("got %s size %d", id.Short(), n))
		}
	}
	for id, n := range want {
		if g, ok := got[id]; !ok || g != n {
			out = append(out, fmt.Sprintf("want %s size %d", id.Short(), n))
		}
	}
	if len(out) > 6 {
		out = append(out[:6], "…")
	}
	return "; " + strings.Join(out, "; ")
}
