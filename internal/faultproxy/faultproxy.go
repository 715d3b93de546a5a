package faultproxy

import (
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Kind is a kind of fault.
type Kind int

const (
	// Error answers Rule.Status with an S3 error document, not forwarding.
	Error Kind = iota
	// ResetBefore resets the client connection without forwarding.
	ResetBefore
	// ResetAfter forwards the request, then resets the client connection
	// without answering: the upstream did the work, the client cannot know.
	ResetAfter
	// Delay waits Rule.Delay before forwarding, or, when Rule.After > 0,
	// after sending After bytes of the answer's body.
	Delay
	// Truncate forwards and sends the headers and the first Rule.After
	// bytes of the body, then closes the connection.
	Truncate
	// Throttle forwards and sends the answer's body at Rule.Rate bytes/s.
	Throttle
	// CutRequest forwards the request with only the first Rule.After bytes
	// of its body, then drops the upstream connection and resets the
	// client's: an upload cut off midway, as the server sees it.
	CutRequest
)

var kindNames = [...]string{"error", "reset-before", "reset-after", "delay", "truncate", "throttle", "cut-request"}

func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Rule says which requests get which fault.
type Rule struct {
	Method string                   // request method to match; "" matches any
	Path   string                   // URL path prefix to match; "" matches any
	Match  func(*http.Request) bool // further condition; nil matches any

	// Fraction is the probability that a matching request gets the fault
	// (0 or 1: every one). Count bounds how many do (0: no bound).
	Fraction float64
	Count    int

	Kind   Kind
	Status int           // Error: the status (default 503)
	Code   string        // Error: the S3 code (default from Status)
	Delay  time.Duration // Delay: how long
	After  int64         // Truncate, Delay, CutRequest: body bytes sent first
	Rate   int64         // Throttle: bytes per second (default 64 KiB/s)
}

// Handle is an installed rule.
type Handle struct {
	rule           Rule
	matched, fired int64 // guarded by Proxy.mu
	p              *Proxy
}

// Matched returns how many requests matched the rule.
func (h *Handle) Matched() int64 { h.p.mu.Lock(); defer h.p.mu.Unlock(); return h.matched }

// Fired returns how many faults the rule injected.
func (h *Handle) Fired() int64 { h.p.mu.Lock(); defer h.p.mu.Unlock(); return h.fired }

// Stats counts what the proxy saw and did.
type Stats struct {
	Requests int64          // requests received
	Faults   int64          // faults injected
	ByKind   map[Kind]int64 // faults by kind
}

// Proxy is a running fault proxy.
type Proxy struct {
	// URL is the proxy's endpoint, http://127.0.0.1:PORT; Addr its host:port.
	URL, Addr string

	upstream *url.URL
	rp       *httputil.ReverseProxy
	tr       *http.Transport
	srv      *http.Server
	done     chan struct{}
	once     sync.Once

	mu    sync.Mutex
	rules []*Handle
	rng   *rand.Rand
	stats Stats
}

// Start starts a proxy in front of upstream (http://host:port) whose
// fraction choices come from seed; it closes when t ends.
func Start(t testing.TB, upstream string, seed uint64) *Proxy {
	t.Helper()
	p, err := New(upstream, seed)
	if err != nil {
		t.Fatalf("faultproxy: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

// New starts a proxy in front of upstream; the caller must Close it.
func New(upstream string, seed uint64) (*Proxy, error) {
	u, err := url.Parse(upstream)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("upstream %q: want http://host:port", upstream)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	quiet := log.New(io.Discard, "", 0)
	p := &Proxy{
		URL:      "http://" + l.Addr().String(),
		Addr:     l.Addr().String(),
		upstream: u,
		tr:       &http.Transport{Proxy: nil, DisableCompression: true, MaxIdleConnsPerHost: 64},
		done:     make(chan struct{}),
		rng:      rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		stats:    Stats{ByKind: map[Kind]int64{}},
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.URL.Path, pr.Out.URL.RawPath = pr.In.URL.Path, pr.In.URL.RawPath // no joining
			pr.Out.Host = pr.In.Host                                                // signed by S3 clients
		},
		Transport: p.tr,
		ErrorLog:  quiet,
	}
	p.srv = &http.Server{Handler: p, ErrorLog: quiet, ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = p.srv.Serve(l) }() // http.ErrServerClosed, once Close is called
	return p, nil
}

// Close stops the proxy: it closes the listener and every connection and
// ends all waits. It is safe to call more than once.
func (p *Proxy) Close() {
	p.once.Do(func() {
		close(p.done)
		_ = p.srv.Close()
		p.tr.CloseIdleConnections()
	})
}

// Add installs a rule after the others.
func (p *Proxy) Add(r Rule) *Handle {
	h := &Handle{rule: r, p: p}
	p.mu.Lock()
	p.rules = append(p.rules, h)
	p.mu.Unlock()
	return h
}

// Remove uninstalls a rule; its counts stay readable.
func (p *Proxy) Remove(h *Handle) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, x := range p.rules {
		if x == h {
			p.rules = append(p.rules[:i:i], p.rules[i+1:]...)
			return
		}
	}
}

// Clear uninstalls every rule: requests pass unharmed from now on.
func (p *Proxy) Clear() {
	p.mu.Lock()
	p.rules = nil
	p.mu.Unlock()
}

// Stats returns a snapshot of the counts.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.ByKind = make(map[Kind]int64, len(p.stats.ByKind))
	for k, v := range p.stats.ByKind {
		s.ByKind[k] = v
	}
	return s
}

// pick counts the request and returns the rule that fires for it, if any.
func (p *Proxy) pick(req *http.Request) (Rule, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Requests++
	for _, h := range p.rules {
		r := &h.rule
		if r.Method != "" && r.Method != req.Method || !strings.HasPrefix(req.URL.Path, r.Path) ||
			r.Match != nil && !r.Match(req) {
			continue
		}
		h.matched++
		if r.Count > 0 && h.fired >= int64(r.Count) {
			continue
		}
		if r.Fraction > 0 && r.Fraction < 1 && p.rng.Float64() >= r.Fraction {
			continue
		}
		h.fired++
		p.stats.Faults++
		p.stats.ByKind[r.Kind]++
		return *r, true
	}
	return Rule{}, false
}

// ServeHTTP forwards req, applying the fault of the first rule that fires.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r, ok := p.pick(req)
	if !ok {
		p.rp.ServeHTTP(w, req)
		return
	}
	switch r.Kind {
	case Error:
		p.answerError(w, req, r)
	case ResetBefore:
		reset(w)
	case ResetAfter:
		p.rp.ServeHTTP(&sink{h: http.Header{}}, req)
		reset(w)
	case Delay:
		if r.After <= 0 {
			if !p.sleep(req, r.Delay) {
				panic(http.ErrAbortHandler) // close without answering
			}
			p.rp.ServeHTTP(w, req)
			return
		}
		p.rp.ServeHTTP(&faultWriter{ResponseWriter: w, p: p, req: req, rule: r}, req)
	case CutRequest:
		req.Body = &cutBody{r: req.Body, left: r.After}
		p.rp.ServeHTTP(&sink{h: http.Header{}}, req)
		reset(w)
	case Truncate, Throttle:
		if r.Kind == Throttle && r.Rate <= 0 {
			r.Rate = 64 << 10
		}
		p.rp.ServeHTTP(&faultWriter{ResponseWriter: w, p: p, req: req, rule: r}, req)
	default:
		panic(fmt.Sprintf("faultproxy: unknown fault kind %v", r.Kind))
	}
}

// answerError drains the request body (as S3 does before it answers) and
// sends an S3 error document.
func (p *Proxy) answerError(w http.ResponseWriter, req *http.Request, r Rule) {
	status, code := r.Status, r.Code
	if status == 0 {
		status = http.StatusServiceUnavailable
	}
	if code == "" {
		switch status {
		case http.StatusServiceUnavailable:
			code = "SlowDown"
		case http.StatusInternalServerError:
			code = "InternalError"
		default:
			code = strings.ReplaceAll(http.StatusText(status), " ", "")
		}
	}
	_, _ = io.Copy(io.Discard, req.Body)
	body := fmt.Sprintf("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"+
		"<Error><Code>%s</Code><Message>%s injected by faultproxy</Message><Resource>%s</Resource>"+
		"<RequestId>faultproxy</RequestId></Error>", code, code, xmlEscape(req.URL.Path))
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(status)
	if req.Method != http.MethodHead {
		_, _ = io.WriteString(w, body)
	}
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// reset closes the client connection with a TCP RST.
func reset(w http.ResponseWriter) {
	c, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// sleep waits d, or until the client goes away or the proxy closes; it
// reports whether the whole wait passed.
func (p *Proxy) sleep(req *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-req.Context().Done():
	case <-p.done:
	}
	return false
}

// errFault ends a response body on purpose; ReverseProxy then aborts the
// response, which closes the connection.
var errFault = errors.New("faultproxy: injected fault")

// faultWriter applies Truncate, Throttle and mid-body Delay to the body.
type faultWriter struct {
	http.ResponseWriter
	p       *Proxy
	req     *http.Request
	rule    Rule
	n       int64 // body bytes written
	delayed bool
}

func (w *faultWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *faultWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

func (w *faultWriter) Write(b []byte) (int, error) {
	r := w.rule
	switch r.Kind {
	case Truncate:
		if rest := r.After - w.n; int64(len(b)) > rest {
			n, _ := w.ResponseWriter.Write(b[:max(rest, 0)])
			w.n += int64(n)
			w.Flush()
			return n, errFault
		}
	case Delay:
		if rest := r.After - w.n; !w.delayed && int64(len(b)) >= rest {
			n, err := w.ResponseWriter.Write(b[:rest])
			w.n += int64(n)
			if err != nil {
				return n, err
			}
			w.Flush()
			w.delayed = true
			if !w.p.sleep(w.req, r.Delay) {
				return n, errFault
			}
			m, err := w.ResponseWriter.Write(b[rest:])
			w.n += int64(m)
			return n + m, err
		}
	case Throttle:
		// Pieces of a twentieth of a second each.
		piece := max(r.Rate/20, 1)
		written := 0
		for len(b) > 0 {
			k := min(int64(len(b)), piece)
			n, err := w.ResponseWriter.Write(b[:k])
			written += n
			w.n += int64(n)
			if err != nil {
				return written, err
			}
			w.Flush()
			b = b[k:]
			if !w.p.sleep(w.req, time.Duration(k)*time.Second/time.Duration(r.Rate)) {
				return written, errFault
			}
		}
		return written, nil
	}
	n, err := w.ResponseWriter.Write(b)
	w.n += int64(n)
	return n, err
}

// cutBody is a request body that fails after its first left bytes, so
// that the upstream request is aborted with its body incomplete.
type cutBody struct {
	r    io.ReadCloser
	left int64
}

func (c *cutBody) Read(b []byte) (int, error) {
	if c.left <= 0 {
		return 0, errFault
	}
	if int64(len(b)) > c.left {
		b = b[:c.left]
	}
	n, err := c.r.Read(b)
	c.left -= int64(n)
	return n, err
}

func (c *cutBody) Close() error { return c.r.Close() }

// sink is a ResponseWriter that throws the answer away.
type sink struct{ h http.Header }

func (s *sink) Header() http.Header         { return s.h }
func (s *sink) WriteHeader(int)             {}
func (s *sink) Write(b []byte) (int, error) { return len(b), nil }
