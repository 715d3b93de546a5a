package gcs_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/internal/faultproxy"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/gcs"
)

// TestFaults runs the store against the emulator behind a fault proxy
// (resumable upload chunks included: the emulator hands out upload URLs on
// the proxy): transient faults are retried away with the data exact,
// persistent ones and stalls fail in bounded time naming the endpoint, and
// a cut-off GET resumes or fails, never returning wrong bytes.
func TestFaults(t *testing.T) {
	srv := startEmulator(t)
	p := faultproxy.Start(t, srv.Endpoint, 10)
	srv.ExternalURL = p.URL
	srv.Restart()
	t.Setenv("STORAGE_EMULATOR_HOST", p.URL)
	opener := func(t *testing.T, prefix string, opt gcs.Options) *gcs.Store {
		t.Helper()
		p.Clear()
		opt.CreateBucket = true
		s := open(t, "gs://faults/"+prefix, opt)
		if s.Endpoint() != p.URL {
			t.Fatalf("store talks to %s, not the proxy %s", s.Endpoint(), p.URL)
		}
		return s
	}
	// Chunks of 1 MiB, so a 3 MiB object is a resumable upload.
	patient := gcs.Options{ChunkSize: 1 << 20, Retries: 6, RetryTime: 30 * time.Second, Timeout: 5 * time.Second}
	isChunk := func(r *http.Request) bool { return r.URL.Query().Has("upload_id") }
	isMedia := func(r *http.Request) bool { return r.URL.Query().Get("alt") == "media" }

	t.Run("transient", func(t *testing.T) {
		s := opener(t, "transient", patient)
		for i, c := range []struct {
			name string
			size int
			rule faultproxy.Rule
		}{
			{"503 on upload", 200 << 10, faultproxy.Rule{Method: "POST", Count: 3, Kind: faultproxy.Error}},
			{"500 on metadata", 1000, faultproxy.Rule{Method: "GET", Match: func(r *http.Request) bool { return !isMedia(r) }, Count: 3, Kind: faultproxy.Error, Status: 500}},
			{"500 on media GET", 300 << 10, faultproxy.Rule{Method: "GET", Match: isMedia, Count: 3, Kind: faultproxy.Error, Status: 500}},
			{"429", 1000, faultproxy.Rule{Count: 3, Kind: faultproxy.Error, Status: 429}},
			{"reset before any", 100 << 10, faultproxy.Rule{Count: 4, Kind: faultproxy.ResetBefore}},
			{"reset after upload", 100 << 10, faultproxy.Rule{Method: "POST", Count: 2, Kind: faultproxy.ResetAfter}},
			{"reset after GET", 100 << 10, faultproxy.Rule{Method: "GET", Count: 2, Kind: faultproxy.ResetAfter}},
			{"half of all fail", 64 << 10, faultproxy.Rule{Fraction: 0.5, Count: 6, Kind: faultproxy.Error}},
			{"resumable chunk 503", 3 << 20, faultproxy.Rule{Match: isChunk, Count: 2, Kind: faultproxy.Error}},
			{"resumable chunk reset after", 3 << 20, faultproxy.Rule{Match: isChunk, Count: 2, Kind: faultproxy.ResetAfter}},
		} {
			t.Run(c.name, func(t *testing.T) {
				data, id := object(int64(100+i), c.size)
				h := p.Add(c.rule)
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
				if h.Fired() == 0 {
					t.Errorf("no fault injected (%d requests matched)", h.Matched())
				}
				t.Logf("%d faults of %d matching requests", h.Fired(), h.Matched())
			})
		}
		// Listing pages through faults and reports every object once.
		h := p.Add(faultproxy.Rule{Method: "GET", Path: "/storage/v1/b/faults/o", Match: func(r *http.Request) bool {
			return r.URL.Query().Has("prefix")
		}, Count: 2, Kind: faultproxy.Error})
		n := 0
		if err := s.List(t.Context(), func(store.Info) error { n++; return nil }); err != nil || n != 10 {
			t.Errorf("list through faults: %d objects, %v; want 10", n, err)
		}
		if h.Fired() == 0 {
			t.Error("no fault injected into the listing")
		}
	})

	t.Run("truncated", func(t *testing.T) {
		s := opener(t, "truncated", patient)
		data, id := object(200, 1<<20)
		if err := store.Put(t.Context(), s, id, data); err != nil {
			t.Fatal(err)
		}
		// Cut off twice, mid-body: the reader resumes where it stopped.
		h := p.Add(faultproxy.Rule{Method: "GET", Match: isMedia, Count: 2, Kind: faultproxy.Truncate, After: 100000})
		got, err := store.ReadAll(t.Context(), s, id)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read through 2 truncations: %d bytes (equal %v), %v", len(got), bytes.Equal(got, data), err)
		}
		if h.Fired() != 2 {
			t.Errorf("%d truncations, want 2", h.Fired())
		}
		// A range, cut off every time a little further on: still exact.
		p.Remove(h)
		h = p.Add(faultproxy.Rule{Method: "GET", Match: isMedia, Count: 4, Kind: faultproxy.Truncate, After: 50000})
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
		h = p.Add(faultproxy.Rule{Method: "GET", Match: isMedia, Kind: faultproxy.Truncate, After: 0})
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
		if !strings.Contains(err.Error(), p.URL) {
			t.Errorf("error %q: want it to name %s", err, p.URL)
		}
		t.Logf("every body cut off: failed after %v, %d GETs: %v", time.Since(start).Round(time.Millisecond), h.Fired(), err)
	})

	t.Run("persistent", func(t *testing.T) {
		s := opener(t, "persistent", gcs.Options{Retries: 3, RetryTime: 3 * time.Second, Timeout: 2 * time.Second})
		present, presentID := object(300, 1000)
		if err := store.Put(t.Context(), s, presentID, present); err != nil {
			t.Fatal(err)
		}
		data, id := object(301, 10<<10)
		h := p.Add(faultproxy.Rule{Kind: faultproxy.Error, Status: 500})
		const bound = 5 * time.Second
		for _, c := range []struct {
			name string
			fn   func() error
		}{
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
	})

	t.Run("stall", func(t *testing.T) {
		s := opener(t, "stall", gcs.Options{Retries: 3, RetryTime: 4 * time.Second, Timeout: time.Second})
		data, id := object(400, 256<<10)
		if err := store.Put(t.Context(), s, id, data); err != nil {
			t.Fatal(err)
		}
		// One stall mid-body: the stalled connection is dropped after
		// Timeout and the read resumes.
		h := p.Add(faultproxy.Rule{Method: "GET", Match: isMedia, Count: 1, Kind: faultproxy.Delay, Delay: time.Minute, After: 70000})
		start := time.Now()
		got, err := store.ReadAll(t.Context(), s, id)
		if err != nil || !bytes.Equal(got, data) || h.Fired() != 1 {
			t.Fatalf("read through a stall: %d bytes, %v, %d stalls", len(got), err, h.Fired())
		}
		t.Logf("read through a stall in %v", time.Since(start).Round(time.Millisecond))
		// Answers that never come: every call fails in bounded time.
		p.Clear()
		p.Add(faultproxy.Rule{Kind: faultproxy.Delay, Delay: time.Minute})
		other, otherID := object(401, 100<<10)
		const bound = 10 * time.Second
		for _, c := range []struct {
			name string
			fn   func() error
		}{
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
	})
}
