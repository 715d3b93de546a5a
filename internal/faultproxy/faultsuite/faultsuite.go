// Package faultsuite is the fault-injection suite every cloud store
// (store/s3, store/azure, store/gcs) passes behind internal/faultproxy:
// each store's test supplies its protocol's requests (which are listings,
// which read bodies, which upload parts) and its tuning.
package faultsuite

import (
	"bytes"
	"errors"
	"io"
	"math/rand"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/internal/faultproxy"
	"github.com/chunkvc/chunkvc/store"
)

// Rig is a cloud store behind a fault proxy, for Run: what the
// suite needs to know of the store's protocol.
type Rig struct {
	Proxy *faultproxy.Proxy
	// Open opens a store at prefix through the proxy, tuned by o; Run
	// clears the proxy's rules first.
	Open func(t *testing.T, prefix string, o Tuning) store.Store
	// Transient are the faults a put, stat and read must ride out, each
	// on an object of its own size.
	Transient []Case
	// List matches the store's listing requests.
	List faultproxy.Rule
	// HasMany, when set, matches the existence checks of HasMany, which
	// must give right answers through its faults.
	HasMany *faultproxy.Rule
	// Media matches the requests that read object bodies (nil: any GET).
	Media func(*http.Request) bool
	// Key returns the object key a request addresses, for the batch
	// cases' rules (nil: the URL path, which ends in the key).
	Key func(*http.Request) string
	// RangeCuts bounds how often a ranged read is cut off (0: every time).
	RangeCuts int
	// SaysAttempts: a persistent failure says "3 attempts" (false where
	// the SDK retries itself); CutIsEOF: a read whose every body is cut
	// off fails with io.ErrUnexpectedEOF.
	SaysAttempts, CutIsEOF bool
}

// Tuning is the retry tuning of a store Run opens.
type Tuning struct {
	// Patient: retries enough for every transient case, and uploads cut
	// in parts (blocks, chunks) of 1 to 5 MiB.
	Patient bool
	// Retries, RetryTime and Timeout as in the stores' Options.
	Retries            int
	RetryTime, Timeout time.Duration
}

// Case is one transient fault on an object of Size bytes.
type Case struct {
	Name string
	Size int
	Rule faultproxy.Rule
}

// Object is n reproducible random bytes and their ID.
func Object(seed int64, n int) ([]byte, hashing.ID) {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b, hashing.Sum(b)
}

// Run runs a cloud store through its fault proxy: transient faults
// are retried away with the data exact, persistent ones and stalls fail in
// bounded time naming the endpoint, and a cut-off GET resumes or fails,
// never returning wrong bytes.
func Run(t *testing.T, rig Rig) {
	open := func(t *testing.T, prefix string, o Tuning) store.Store {
		t.Helper()
		rig.Proxy.Clear()
		return rig.Open(t, prefix, o)
	}
	if rig.Media == nil {
		rig.Media = func(*http.Request) bool { return true }
	}
	patient := Tuning{Patient: true, Retries: 6, RetryTime: 30 * time.Second, Timeout: 5 * time.Second}
	t.Run("transient", func(t *testing.T) { faultsTransient(t, rig, open(t, "transient", patient)) })
	t.Run("truncated", func(t *testing.T) { faultsTruncated(t, rig, open(t, "truncated", patient)) })
	t.Run("persistent", func(t *testing.T) {
		faultsPersistent(t, rig, open(t, "persistent", Tuning{Retries: 3, RetryTime: 3 * time.Second, Timeout: 2 * time.Second}))
	})
	t.Run("stall", func(t *testing.T) {
		faultsStall(t, rig, open(t, "stall", Tuning{Retries: 3, RetryTime: 4 * time.Second, Timeout: time.Second}))
	})
	t.Run("slow", func(t *testing.T) {
		faultsSlow(t, rig, open(t, "slow", Tuning{Retries: 1, Timeout: time.Second}))
	})
	t.Run("batch", func(t *testing.T) {
		faultsBatch(t, rig, Tuning{Patient: true, Retries: 4, RetryTime: 10 * time.Second, Timeout: 2 * time.Second})
	})
}

func faultsTransient(t *testing.T, rig Rig, s store.Store) {
	p := rig.Proxy
	for i, c := range rig.Transient {
		t.Run(c.Name, func(t *testing.T) {
			data, id := Object(int64(100+i), c.Size)
			h := p.Add(c.Rule)
			defer p.Remove(h)
			if err := store.Put(t.Context(), s, id, data); err != nil {
				t.Fatalf("put: %v", err)
			}
			info, err := s.Stat(t.Context(), id)
			if err != nil || info.Size != int64(len(data)) {
				t.Fatalf("stat: %+v, %v", info, err)
			}
			got, err := store.ReadAll(t.Context(), s, id)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("read back: %d bytes (equal %v), %v", len(got), bytes.Equal(got, data), err)
			}
			checkFired(t, h)
		})
	}
	// Listing pages through faults and reports every object once.
	h := p.Add(rig.List)
	var ids []hashing.ID
	err := s.List(t.Context(), func(info store.Info) error { ids = append(ids, info.ID); return nil })
	if err != nil || len(ids) != len(rig.Transient) {
		t.Errorf("list through faults: %d objects, %v; want %d", len(ids), err, len(rig.Transient))
	}
	if h.Fired() == 0 {
		t.Error("no fault injected into the listing")
	}
	p.Remove(h)
	if rig.HasMany == nil {
		return
	}
	// HasMany through faults: every answer right, or an error.
	h = p.Add(*rig.HasMany)
	_, missing := Object(999, 10)
	has, err := store.HasMany(t.Context(), s, append([]hashing.ID{missing}, ids...))
	if err != nil {
		t.Fatalf("HasMany through faults: %v", err)
	}
	for _, id := range ids {
		if !has[id] {
			t.Errorf("HasMany through faults: %s reported missing", id.Short())
		}
	}
	if has[missing] {
		t.Error("HasMany through faults: a missing object reported present")
	}
	if h.Fired() == 0 {
		t.Error("no fault injected into HasMany")
	}
}

func faultsTruncated(t *testing.T, rig Rig, s store.Store) {
	p := rig.Proxy
	data, id := Object(200, 1<<20)
	if err := store.Put(t.Context(), s, id, data); err != nil {
		t.Fatal(err)
	}
	// Cut off twice, mid-body: the reader resumes where it stopped.
	h := p.Add(faultproxy.Rule{Method: "GET", Match: rig.Media, Count: 2, Kind: faultproxy.Truncate, After: 100000})
	got, err := store.ReadAll(t.Context(), s, id)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read through 2 truncations: %d bytes (equal %v), %v", len(got), bytes.Equal(got, data), err)
	}
	if h.Fired() != 2 {
		t.Errorf("%d truncations, want 2", h.Fired())
	}
	// A range, cut off a little further on each time: still exact.
	p.Remove(h)
	h = p.Add(faultproxy.Rule{Method: "GET", Match: rig.Media, Count: rig.RangeCuts, Kind: faultproxy.Truncate, After: 50000})
	rc, err := s.Get(t.Context(), id, 12345, 300000)
	if err != nil {
		t.Fatal(err)
	}
	got, err = io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, data[12345:12345+300000]) {
		t.Fatalf("range through truncations: %d bytes, %v", len(got), err)
	}
	// No body at all, every time: the read fails, naming the endpoint,
	// after returning nothing but a prefix of the truth.
	p.Remove(h)
	h = p.Add(faultproxy.Rule{Method: "GET", Match: rig.Media, Kind: faultproxy.Truncate, After: 0})
	start := time.Now()
	rc, err = s.Get(t.Context(), id, 0, -1)
	if err == nil {
		got, err = io.ReadAll(rc)
		rc.Close()
	}
	if err == nil {
		t.Fatal("read with every answer cut off succeeded")
	}
	if !bytes.HasPrefix(data, got) {
		t.Fatalf("read returned %d bytes that are not the object's", len(got))
	}
	if rig.CutIsEOF && !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), p.URL) {
		t.Errorf("error %q: want unexpected EOF (%v) naming %s", err, rig.CutIsEOF, p.URL)
	}
	t.Logf("every body cut off: failed after %v, %d GETs: %v", time.Since(start).Round(time.Millisecond), h.Fired(), err)
}

// namedCall is one store call of a fault case.
type namedCall struct {
	name string
	fn   func() error
}

func faultsPersistent(t *testing.T, rig Rig, s store.Store) {
	p := rig.Proxy
	present, presentID := Object(300, 1000)
	if err := store.Put(t.Context(), s, presentID, present); err != nil {
		t.Fatal(err)
	}
	data, id := Object(301, 10<<10)
	h := p.Add(faultproxy.Rule{Kind: faultproxy.Error, Status: 500})
	const bound = 5 * time.Second
	for _, c := range []namedCall{
		{"put", func() error { return store.Put(t.Context(), s, id, data) }},
		{"stat", func() error { _, err := s.Stat(t.Context(), presentID); return err }},
		{"get", func() error { _, err := store.ReadAll(t.Context(), s, presentID); return err }},
	} {
		before := h.Fired()
		start := time.Now()
		err := c.fn()
		took := time.Since(start)
		if err == nil || errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s with every request failing: %v; want a failure that is not ErrNotFound", c.name, err)
			continue
		}
		if took > bound || !strings.Contains(err.Error(), p.URL) {
			t.Errorf("%s failed after %v (want < %v) with %q (want it to name %s)", c.name, took, bound, err, p.URL)
		}
		if rig.SaysAttempts && !strings.Contains(err.Error(), "3 attempts") {
			t.Errorf("%s error %q does not say %q", c.name, err, "3 attempts")
		}
		if n := h.Fired() - before; n != 3 {
			t.Errorf("%s: %d requests failed, want 3 (one per attempt)", c.name, n)
		}
		t.Logf("%s failed after %v: %v", c.name, took.Round(time.Millisecond), err)
	}
	// 503s: the store is unavailable, and says so by behaviour.
	p.Clear()
	p.Add(faultproxy.Rule{Kind: faultproxy.Error, Status: 503})
	if _, err := s.Stat(t.Context(), presentID); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("stat with every answer 503: %v, want ErrUnavailable", err)
	}
	p.Clear()
	if err := store.Put(t.Context(), s, id, data); err != nil {
		t.Fatalf("put once the faults stop: %v", err)
	}
}

func faultsStall(t *testing.T, rig Rig, s store.Store) {
	p := rig.Proxy
	data, id := Object(400, 256<<10)
	if err := store.Put(t.Context(), s, id, data); err != nil {
		t.Fatal(err)
	}
	// One stall mid-body: the stalled connection is dropped after Timeout
	// (1 s) and the read resumes.
	h := p.Add(faultproxy.Rule{Method: "GET", Match: rig.Media, Count: 1, Kind: faultproxy.Delay, Delay: time.Minute, After: 70000})
	start := time.Now()
	got, err := store.ReadAll(t.Context(), s, id)
	if err != nil || !bytes.Equal(got, data) || h.Fired() != 1 {
		t.Fatalf("read through a stall: %d bytes, %v, %d stalls", len(got), err, h.Fired())
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("read through a stall took %v; the stalled body should be dropped after 1 s", took)
	}
	// Answers that never come: every call fails in bounded time.
	p.Clear()
	p.Add(faultproxy.Rule{Kind: faultproxy.Delay, Delay: time.Minute})
	other, otherID := Object(401, 100<<10)
	const bound = 10 * time.Second
	for _, c := range []namedCall{
		{"put", func() error { return store.Put(t.Context(), s, otherID, other) }},
		{"get", func() error { _, err := store.ReadAll(t.Context(), s, id); return err }},
	} {
		start := time.Now()
		err := c.fn()
		took := time.Since(start)
		if err == nil {
			t.Errorf("%s with every answer stalled succeeded", c.name)
			continue
		}
		if took > bound || !strings.Contains(err.Error(), p.URL) || !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s failed after %v (want < %v) with %q (want ErrUnavailable naming %s)", c.name, took, bound, err, p.URL)
		}
		t.Logf("%s stalled: failed after %v: %v", c.name, took.Round(time.Millisecond), err)
	}
}

// faultsSlow: a slow answer that keeps moving is not a stall; 384 KiB at
// 256 KiB/s takes 1.5 s with a 1 s Timeout.
func faultsSlow(t *testing.T, rig Rig, s store.Store) {
	data, id := Object(500, 384<<10)
	if err := store.Put(t.Context(), s, id, data); err != nil {
		t.Fatal(err)
	}
	// Load what a store reads first (S3's pack indexes) before throttling.
	if _, err := s.Stat(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	h := rig.Proxy.Add(faultproxy.Rule{Method: "GET", Match: rig.Media, Kind: faultproxy.Throttle, Rate: 256 << 10})
	start := time.Now()
	got, err := store.ReadAll(t.Context(), s, id)
	if err != nil || !bytes.Equal(got, data) || h.Fired() != 1 {
		t.Fatalf("slow read: %d bytes, %v, %d throttled", len(got), err, h.Fired())
	}
	if d := time.Since(start); d < time.Second {
		t.Errorf("throttled read took only %v", d)
	}
}
