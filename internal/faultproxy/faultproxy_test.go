package faultproxy_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/internal/faultproxy"
)

// upstream serves a fixed body on every path and counts requests; it
// echoes the Host header and the request body's length in headers.
func upstream(t *testing.T, body []byte) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		got, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Host", r.Host)
		w.Header().Set("X-Path", r.URL.RawPath+"|"+r.URL.Path+"?"+r.URL.RawQuery)
		w.Header().Set("X-Got", strconv.Itoa(len(got)))
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// client makes a fresh connection per request, so the transport never
// retries a request on its own after a reset.
func client(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
}

func get(t *testing.T, c *http.Client, url string) ([]byte, *http.Response, error) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return b, resp, err
}

func TestPassThrough(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789"), 10000)
	up, seen := upstream(t, body)
	p := faultproxy.Start(t, up.URL, 1)
	req, _ := http.NewRequest(http.MethodPut, p.URL+"/bucket/a%2Fb/key?partNumber=2", strings.NewReader("abc"))
	resp, err := client(5 * time.Second).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("body through the proxy: %d bytes, %v", len(got), err)
	}
	if h := resp.Header.Get("X-Host"); h != p.Addr {
		t.Errorf("upstream saw Host %q, want the proxy's %q (signatures cover it)", h, p.Addr)
	}
	if h := resp.Header.Get("X-Path"); h != "/bucket/a%2Fb/key|/bucket/a/b/key?partNumber=2" {
		t.Errorf("upstream saw path %q", h)
	}
	if resp.Header.Get("X-Got") != "3" || seen.Load() != 1 {
		t.Errorf("upstream got a %s-byte body, %d requests", resp.Header.Get("X-Got"), seen.Load())
	}
	if s := p.Stats(); s.Requests != 1 || s.Faults != 0 {
		t.Errorf("stats %+v", s)
	}
}

func TestErrorCount(t *testing.T) {
	up, seen := upstream(t, []byte("ok"))
	p := faultproxy.Start(t, up.URL, 1)
	h := p.Add(faultproxy.Rule{Method: http.MethodGet, Path: "/b/", Count: 2, Kind: faultproxy.Error})
	p.Add(faultproxy.Rule{Path: "/b/x", Kind: faultproxy.Error, Status: 500}) // other path only
	c := client(5 * time.Second)
	for i, want := range []int{503, 503, 200, 200} {
		b, resp, err := get(t, c, p.URL+"/b/key")
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != want {
			t.Errorf("request %d: %s, want %d", i, resp.Status, want)
		}
		if want == 503 && !bytes.Contains(b, []byte("<Code>SlowDown</Code>")) {
			t.Errorf("503 body %q has no SlowDown code", b)
		}
	}
	if _, resp, _ := get(t, c, p.URL+"/b/x1"); resp == nil || resp.StatusCode != 500 {
		t.Errorf("second rule did not answer 500: %v", resp)
	}
	if h.Fired() != 2 || h.Matched() != 5 || seen.Load() != 2 {
		t.Errorf("fired %d matched %d upstream %d; want 2, 5, 2", h.Fired(), h.Matched(), seen.Load())
	}
	s := p.Stats()
	if s.Requests != 5 || s.Faults != 3 || s.ByKind[faultproxy.Error] != 3 {
		t.Errorf("stats %+v", s)
	}
	p.Clear()
	if _, resp, _ := get(t, c, p.URL+"/b/x1"); resp == nil || resp.StatusCode != 200 {
		t.Errorf("after Clear: %v", resp)
	}
}

// TestFractionSeeded checks that a seed fixes which requests fail.
func TestFractionSeeded(t *testing.T) {
	up, _ := upstream(t, []byte("ok"))
	pattern := func(seed uint64) string {
		p := faultproxy.Start(t, up.URL, seed)
		p.Add(faultproxy.Rule{Fraction: 0.3, Kind: faultproxy.Error, Status: 500})
		var b strings.Builder
		c := client(5 * time.Second)
		for range 200 {
			_, resp, err := get(t, c, p.URL+"/x")
			if err != nil {
				t.Fatal(err)
			}
			b.WriteByte(byte('0' + resp.StatusCode/100))
		}
		return b.String()
	}
	a, b, c := pattern(7), pattern(7), pattern(8)
	if a != b || a == c {
		t.Errorf("same seed gave different patterns (%v) or another seed the same (%v)", a != b, a == c)
	}
	if n := strings.Count(a, "5"); n < 35 || n > 85 {
		t.Errorf("%d of 200 requests failed at fraction 0.3", n)
	}
}

func TestResets(t *testing.T) {
	up, seen := upstream(t, []byte("ok"))
	p := faultproxy.Start(t, up.URL, 1)
	c := client(5 * time.Second)
	p.Add(faultproxy.Rule{Count: 1, Kind: faultproxy.ResetBefore})
	if _, _, err := get(t, c, p.URL+"/x"); err == nil {
		t.Error("reset before forwarding: no error")
	}
	if seen.Load() != 0 {
		t.Error("reset before forwarding reached the upstream")
	}
	p.Clear()
	p.Add(faultproxy.Rule{Count: 1, Kind: faultproxy.ResetAfter})
	if _, _, err := get(t, c, p.URL+"/x"); err == nil {
		t.Error("reset after forwarding: no error")
	} else {
		t.Logf("reset after: %v", err)
	}
	if seen.Load() != 1 {
		t.Error("reset after forwarding did not reach the upstream")
	}
	if b, _, err := get(t, c, p.URL+"/x"); err != nil || string(b) != "ok" {
		t.Errorf("after the counted resets: %q, %v", b, err)
	}
}

func TestTruncate(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 100000)
	up, _ := upstream(t, body)
	p := faultproxy.Start(t, up.URL, 1)
	p.Add(faultproxy.Rule{Count: 1, Kind: faultproxy.Truncate, After: 1234})
	b, resp, err := get(t, client(5*time.Second), p.URL+"/x")
	if resp == nil || resp.StatusCode != 200 || len(b) != 1234 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated answer: %d bytes, %v; want 1234 bytes, unexpected EOF", len(b), err)
	}
}

// TestCutRequest: the upstream sees the request with only the first
// After bytes of its body, never the whole, and the client an error.
func TestCutRequest(t *testing.T) {
	var got atomic.Int64
	got.Store(-1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err == nil {
			got.Store(int64(len(b))) // a whole body arrived
		} else {
			got.Store(-int64(len(b)) - 2)
		}
	}))
	t.Cleanup(up.Close)
	p := faultproxy.Start(t, up.URL, 1)
	p.Add(faultproxy.Rule{Count: 1, Kind: faultproxy.CutRequest, After: 1000})
	req, _ := http.NewRequest(http.MethodPut, p.URL+"/x", bytes.NewReader(make([]byte, 100000)))
	if resp, err := client(5 * time.Second).Do(req); err == nil {
		resp.Body.Close()
		t.Errorf("cut upload: answered %s, want an error", resp.Status)
	}
	deadline := time.Now().Add(5 * time.Second)
	for got.Load() == -1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := got.Load(); n >= 0 || -n-2 > 1000 {
		t.Errorf("upstream state %d: want a body cut off after at most 1000 bytes (-2-n)", n)
	}
}

func TestDelayAndThrottle(t *testing.T) {
	body := bytes.Repeat([]byte("y"), 64<<10)
	up, _ := upstream(t, body)
	p := faultproxy.Start(t, up.URL, 1)

	// A stall before the answer beyond the client's timeout.
	p.Add(faultproxy.Rule{Count: 1, Kind: faultproxy.Delay, Delay: time.Hour})
	start := time.Now()
	if _, _, err := get(t, client(300*time.Millisecond), p.URL+"/x"); err == nil {
		t.Error("delay of an hour: no timeout")
	}
	// A stall mid-body: headers and 1000 bytes arrive, then nothing.
	p.Clear()
	p.Add(faultproxy.Rule{Count: 1, Kind: faultproxy.Delay, Delay: time.Hour, After: 1000})
	resp, err := client(5 * time.Second).Get(p.URL + "/x")
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, 1000)
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatal(err)
	}
	more := make(chan error, 1)
	go func() { _, err := resp.Body.Read(make([]byte, 10)); more <- err }()
	select {
	case err := <-more:
		t.Errorf("read past the stall point: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	resp.Body.Close()
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("delays took %v", d)
	}

	// 64 KiB at 256 KiB/s: about 250 ms.
	p.Clear()
	p.Add(faultproxy.Rule{Kind: faultproxy.Throttle, Rate: 256 << 10})
	start = time.Now()
	b, _, err := get(t, client(5*time.Second), p.URL+"/x")
	d := time.Since(start)
	if err != nil || !bytes.Equal(b, body) {
		t.Fatalf("throttled: %d bytes, %v", len(b), err)
	}
	if d < 200*time.Millisecond || d > 2*time.Second {
		t.Errorf("64 KiB at 256 KiB/s took %v", d)
	}
}

// TestCloseEndsWaits checks that a request stuck in a long delay ends
// when the proxy closes.
func TestCloseEndsWaits(t *testing.T) {
	up, _ := upstream(t, []byte("ok"))
	p, err := faultproxy.New(up.URL, 1)
	if err != nil {
		t.Fatal(err)
	}
	p.Add(faultproxy.Rule{Kind: faultproxy.Delay, Delay: time.Hour})
	done := make(chan error, 1)
	go func() { _, _, err := get(t, client(time.Minute), p.URL+"/x"); done <- err }()
	time.Sleep(100 * time.Millisecond)
	p.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Error("request through a closed proxy succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("request still waiting 5 s after Close")
	}
	p.Close() // twice is fine
}
