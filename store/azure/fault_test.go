package azure_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/internal/faultproxy"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/azure"
)

// TestFaults runs the store against Azurite behind a fault proxy:
// transient faults are retried away with the data exact, persistent ones
// and stalls fail in bounded time naming the endpoint, and a cut-off GET
// resumes or fails, never returning wrong bytes.
func TestFaults(t *testing.T) {
	srv := startAzurite(t)
	p := faultproxy.Start(t, "http://"+srv.Addr, 10)
	t.Setenv("CHUNKVC_AZURE_ENDPOINT", p.URL+"/"+srv.Account)
	opener := func(t *testing.T, prefix string, opt azure.Options) *azure.Store {
		t.Helper()
		p.Clear()
		opt.CreateContainer = true
		s := open(t, "az://faults/"+prefix, opt)
		if !strings.HasPrefix(s.Endpoint(), p.URL) {
			t.Fatalf("store talks to %s, not the proxy %s", s.Endpoint(), p.URL)
		}
		return s
	}
	// Blocks of 1 MiB, so a 3 MiB object is staged.
	patient := azure.Options{BlockSize: 1 << 20, Retries: 6, RetryTime: 30 * time.Second, Timeout: 5 * time.Second}
	isBlock := func(r *http.Request) bool { return r.URL.Query().Get("comp") == "block" }
	isList := func(r *http.Request) bool { return r.URL.Query().Get("comp") == "list" }

	t.Run("transient", func(t *testing.T) {
		s := opener(t, "transient", patient)
		for i, c := range []struct {
			name string
			size int
			rule faultproxy.Rule
		}{
			{"503 on PUT", 200 << 10, faultproxy.Rule{Method: "PUT", Count: 3, Kind: faultproxy.Error}},
			{"500 on HEAD", 1000, faultproxy.Rule{Method: "HEAD", Count: 3, Kind: faultproxy.Error, Status: 500}},
			{"500 on GET", 300 << 10, faultproxy.Rule{Method: "GET", Count: 3, Kind: faultproxy.Error, Status: 500}},
			{"429 on PUT", 1000, faultproxy.Rule{Method: "PUT", Count: 2, Kind: faultproxy.Error, Status: 429}},
			{"reset before any", 100 << 10, faultproxy.Rule{Count: 4, Kind: faultproxy.ResetBefore}},
			{"reset after PUT", 100 << 10, faultproxy.Rule{Method: "PUT", Count: 2, Kind: faultproxy.ResetAfter}},
			{"reset after GET", 100 << 10, faultproxy.Rule{Method: "GET", Count: 2, Kind: faultproxy.ResetAfter}},
			{"half of all fail", 64 << 10, faultproxy.Rule{Fraction: 0.5, Count: 6, Kind: faultproxy.Error}},
			{"staged block 503", 3 << 20, faultproxy.Rule{Method: "PUT", Match: isBlock, Count: 2, Kind: faultproxy.Error}},
			{"staged block reset", 3<<20 + 1, faultproxy.Rule{Method: "PUT", Match: isBlock, Count: 2, Kind: faultproxy.ResetAfter}},
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
		h := p.Add(faultproxy.Rule{Method: "GET", Match: isList, Count: 2, Kind: faultproxy.Error})
		n := 0
		if err := s.List(t.Context(), func(store.Info) error { n++; return nil }); err != nil || n != 10 {
			t.Errorf("list through faults: %d objects, %v; want 10", n, err)
		}
		if h.Fired() == 0 {
			t.Error("no fault injected into the listing")
		}
		// HasMany through faults: every answer right, or an error.
		p.Remove(h)
		h = p.Add(faultproxy.Rule{Method: "HEAD", Fraction: 0.3, Count: 5, Kind: faultproxy.Error})
		_, missing := object(999, 10)
		ids := []hashing.ID{missing} // and the ten objects put above
		_ = s.List(t.Context(), func(info store.Info) error { ids = append(ids, info.ID); return nil })
		has, err := s.HasMany(t.Context(), ids)
		if err != nil {
			t.Fatalf("HasMany through faults: %v", err)
		}
		for i, id := range ids {
			if has[id] != (i > 0) {
				t.Errorf("HasMany through faults: %s reported %v", id.Short(), has[id])
			}
		}
		if h.Fired() == 0 {
			t.Error("no fault injected into HasMany")
		}
	})

	t.Run("truncated", func(t *testing.T) {
		s := opener(t, "truncated", patient)
		data, id := object(200, 1<<20)
		if err := store.Put(t.Context(), s, id, data); err != nil {
			t.Fatal(err)
		}
		// Cut off twice, mid-body: the reader resumes where it stopped.
		h := p.Add(faultproxy.Rule{Method: "GET", Count: 2, Kind: faultproxy.Truncate, After: 100000})
		got, err := store.ReadAll(t.Context(), s, id)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read through 2 truncations: %d bytes (equal %v), %v", len(got), bytes.Equal(got, data), err)
		}
		if h.Fired() != 2 {
			t.Errorf("%d truncations, want 2", h.Fired())
		}
		// A range, cut off every time a little further on: still exact.
		p.Remove(h)
		h = p.Add(faultproxy.Rule{Method: "GET", Kind: faultproxy.Truncate, After: 50000})
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
		p.Add(faultproxy.Rule{Method: "GET", Kind: faultproxy.Truncate, After: 0})
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
		if !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), p.URL) {
			t.Errorf("error %q: want unexpected EOF naming %s", err, p.URL)
		}
	})

	t.Run("persistent", func(t *testing.T) {
		s := opener(t, "persistent", azure.Options{Retries: 3, RetryTime: 3 * time.Second, Timeout: 2 * time.Second})
		present, presentID := object(300, 1000)
		if err := store.Put(t.Context(), s, presentID, present); err != nil {
			t.Fatal(err)
		}
		data, id := object(301, 10<<10)
		h := p.Add(faultproxy.Rule{Kind: faultproxy.Error, Status: 500})
		const bound = 5 * time.Second
		for name, fn := range map[string]func() error{
			"put":  func() error { return store.Put(t.Context(), s, id, data) },
			"stat": func() error { _, err := s.Stat(t.Context(), presentID); return err },
			"get": func() error {
				_, err := store.ReadAll(t.Context(), s, presentID)
				return err
			},
		} {
			before := h.Fired()
			start := time.Now()
			err := fn()
			took := time.Since(start)
			if err == nil || errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s with every request failing: %v; want a failure that is not ErrNotFound", name, err)
				continue
			}
			if took > bound {
				t.Errorf("%s took %v to fail, want < %v", name, took, bound)
			}
			for _, want := range []string{p.URL, "3 attempts"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%s error %q does not say %q", name, err, want)
				}
			}
			if n := h.Fired() - before; n != 3 {
				t.Errorf("%s: %d requests failed, want 3 (one per attempt)", name, n)
			}
		}
		p.Clear()
		if err := store.Put(t.Context(), s, id, data); err != nil {
			t.Fatalf("put once the faults stop: %v", err)
		}
	})

	t.Run("stall", func(t *testing.T) {
		s := opener(t, "stall", azure.Options{Retries: 3, RetryTime: 4 * time.Second, Timeout: time.Second})
		data, id := object(400, 256<<10)
		if err := store.Put(t.Context(), s, id, data); err != nil {
			t.Fatal(err)
		}
		// One stall mid-body: the stalled body is dropped after Timeout
		// and the read resumes.
		h := p.Add(faultproxy.Rule{Method: "GET", Count: 1, Kind: faultproxy.Delay, Delay: time.Minute, After: 70000})
		start := time.Now()
		got, err := store.ReadAll(t.Context(), s, id)
		if err != nil || !bytes.Equal(got, data) || h.Fired() != 1 {
			t.Fatalf("read through a stall: %d bytes, %v, %d stalls", len(got), err, h.Fired())
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("read through a stall took %v; the stalled body should be dropped after 1 s", took)
		}
		t.Logf("read through a stall in %v", time.Since(start).Round(time.Millisecond))
		// Answers that never come: every call fails in bounded time.
		p.Clear()
		p.Add(faultproxy.Rule{Kind: faultproxy.Delay, Delay: time.Minute})
		other, otherID := object(401, 100<<10)
		const bound = 8 * time.Second
		for name, fn := range map[string]func() error{
			"put": func() error { return store.Put(t.Context(), s, otherID, other) },
			"get": func() error { _, err := store.ReadAll(t.Context(), s, id); return err },
		} {
			start := time.Now()
			err := fn()
			took := time.Since(start)
			if err == nil {
				t.Errorf("%s with every answer stalled succeeded", name)
				continue
			}
			if took > bound || !strings.Contains(err.Error(), p.URL) || !errors.Is(err, store.ErrUnavailable) {
				t.Errorf("%s failed after %v (want < %v) with %q (want it to name %s and be ErrUnavailable)", name, took, bound, err, p.URL)
			}
			t.Logf("%s stalled: failed after %v: %v", name, took.Round(time.Millisecond), err)
		}
	})

	t.Run("slow", func(t *testing.T) {
		// A slow answer that keeps moving is not a stall: 384 KiB at
		// 256 KiB/s takes 1.5 s with a 1 s Timeout.
		s := opener(t, "slow", azure.Options{Retries: 1, Timeout: time.Second})
		data, id := object(500, 384<<10)
		if err := store.Put(t.Context(), s, id, data); err != nil {
			t.Fatal(err)
		}
		h := p.Add(faultproxy.Rule{Method: "GET", Kind: faultproxy.Throttle, Rate: 256 << 10})
		start := time.Now()
		got, err := store.ReadAll(t.Context(), s, id)
		if err != nil || !bytes.Equal(got, data) || h.Fired() != 1 {
			t.Fatalf("slow read: %d bytes, %v, %d throttled", len(got), err, h.Fired())
		}
		if d := time.Since(start); d < time.Second {
			t.Errorf("throttled read took only %v", d)
		}
	})
}
