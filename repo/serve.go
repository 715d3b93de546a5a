package repo

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/store"
)

// ServeOptions configures a Server.
type ServeOptions struct {
	// Token, when set, is required on every request, as
	// "Authorization: Bearer TOKEN" or a "token=TOKEN" query parameter.
	Token string
	// Log, when set, receives one JSON object per request, one per line.
	Log io.Writer
	// MemBytes bounds chunks kept in memory (0 = DefaultChunkMemory).
	MemBytes int64
	// FetchLimit bounds concurrent chunk reads (0 = DefaultFetchLimit).
	FetchLimit int
}

// ServeStats is what /debug/stats reports.
type ServeStats struct {
	Requests    int64   `json:"requests"`
	Errors      int64   `json:"errors"` // answers with status ≥ 500
	BytesServed int64   `json:"bytes_served"`
	UptimeSec   float64 `json:"uptime_s"`
	ReadStats
}

// Server answers HTTP/1.1 GET and HEAD for /<rev>/<path>: any branch, tag
// or commit, any tracked file, assembled on demand from the layout and the
// chunks (verified before a byte is sent). Range (single, multiple, suffix,
// open-ended), If-None-Match, If-Range and HEAD follow net/http's
// ServeContent; the ETag is the file's BLAKE3 digest. /debug/stats returns
// ServeStats as JSON. A rev containing "/" (feature/x) is found by trying
// the longest prefix of the URL path that resolves and names a tracked file.
type Server struct {
	r     *Repo
	opt   ServeOptions
	cr    *ChunkReader
	start time.Time

	requests, errors, bytesServed atomic.Int64

	gitMu  sync.Mutex // go-git is not safe for concurrent use
	blobs  map[plumbing.Hash]map[string]plumbing.Hash
	logMu  sync.Mutex
	closed atomic.Bool
}

// NewServer returns a Server for r.
func (r *Repo) NewServer(opt ServeOptions) *Server {
	return &Server{r: r, opt: opt, cr: r.NewChunkReader(opt.MemBytes, opt.FetchLimit), start: time.Now(),
		blobs: map[plumbing.Hash]map[string]plumbing.Hash{}}
}

// Stats returns the counters so far.
func (s *Server) Stats() ServeStats {
	return ServeStats{
		Requests: s.requests.Load(), Errors: s.errors.Load(), BytesServed: s.bytesServed.Load(),
		UptimeSec: time.Since(s.start).Seconds(), ReadStats: s.cr.Stats(),
	}
}

// CheckServeAddr refuses to bind a non-loopback address without a token.
func CheckServeAddr(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("address %q: %w", addr, err)
	}
	if token != "" {
		return nil
	}
	loopback := host == "localhost"
	if ip := net.ParseIP(host); ip != nil {
		loopback = ip.IsLoopback()
	}
	if !loopback {
		return fmt.Errorf("refusing to serve on %s, which is not a loopback address, without --token", addr)
	}
	return nil
}

// Serve answers requests on ln until ctx ends, then shuts down gracefully
// (in-flight requests get a few seconds to finish).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.closed.Store(true)
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if e := <-errc; !errors.Is(e, http.ErrServerClosed) && err == nil {
		err = e
	}
	return err
}

// countingWriter records the status and counts body bytes.
type countingWriter struct {
	http.ResponseWriter
	status int
	n      int64
}

func (w *countingWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *countingWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.n += int64(n)
	return n, err
}

// logLine is one --json-log record.
type logLine struct {
	Time          string  `json:"time"`
	Remote        string  `json:"remote"`
	Method        string  `json:"method"`
	Path          string  `json:"path"`
	Range         string  `json:"range,omitempty"`
	Status        int     `json:"status"`
	Bytes         int64   `json:"bytes"`
	DurationMS    float64 `json:"duration_ms"`
	Commit        string  `json:"commit,omitempty"`
	ChunksFetched int64   `json:"chunks_fetched"`
	BytesFetched  int64   `json:"bytes_fetched"`
	ChunksLocal   int64   `json:"chunks_local"`
	Error         string  `json:"error,omitempty"`
}

func (s *Server) ServeHTTP(rw http.ResponseWriter, req *http.Request) {
	t0 := time.Now()
	s.requests.Add(1)
	w := &countingWriter{ResponseWriter: rw}
	var rc readCounters
	ctx := withCounters(req.Context(), &rc)
	info := &reqInfo{}
	s.handle(ctx, w, req, info)
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.status >= 500 {
		s.errors.Add(1)
	}
	s.bytesServed.Add(w.n)
	if s.opt.Log == nil {
		return
	}
	rs := rc.snapshot()
	line := logLine{
		Time: t0.UTC().Format(time.RFC3339Nano), Remote: req.RemoteAddr, Method: req.Method, Path: req.URL.Path,
		Range: req.Header.Get("Range"), Status: w.status, Bytes: w.n,
		DurationMS: float64(time.Since(t0).Microseconds()) / 1000, Commit: info.commit,
		ChunksFetched: rs.ChunksFetched, BytesFetched: rs.BytesFetched, ChunksLocal: rs.ChunksLocal,
	}
	if info.err != nil {
		line.Error = info.err.Error()
	}
	b, _ := json.Marshal(line)
	s.logMu.Lock()
	_, _ = s.opt.Log.Write(append(b, '\n')) // a log that fails does not fail the request
	s.logMu.Unlock()
}

type reqInfo struct {
	commit string
	err    error
}

func (s *Server) authorized(req *http.Request) bool {
	if s.opt.Token == "" {
		return true
	}
	got := req.URL.Query().Get("token")
	if a := req.Header.Get("Authorization"); strings.HasPrefix(a, "Bearer ") {
		got = strings.TrimPrefix(a, "Bearer ")
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(s.opt.Token)) == 1
}

func (s *Server) handle(ctx context.Context, w http.ResponseWriter, req *http.Request, info *reqInfo) {
	fail := func(code int, err error) {
		info.err = err
		http.Error(w, err.Error(), code)
	}
	if !s.authorized(req) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="chunkvc"`)
		fail(http.StatusUnauthorized, errors.New("missing or wrong token"))
		return
	}
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		fail(http.StatusMethodNotAllowed, fmt.Errorf("method %s not allowed", req.Method))
		return
	}
	if req.URL.Path == "/debug/stats" {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(s.Stats())
		return
	}
	m, commit, code, err := s.resolve(req.URL.Path)
	if err != nil {
		fail(code, err)
		return
	}
	info.commit = commit
	f, err := s.cr.OpenFile(ctx, m)
	if err != nil {
		fail(errorStatus(err), err)
		return
	}
	etag := `"` + m.Digest.String() + `"`
	h := w.Header()
	h.Set("ETag", etag)
	h.Set("Content-Type", contentType(m.Format))
	h.Set("X-Chunkvc-Commit", commit)
	if isCommitID(req.URL.Path, commit) {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	var windows [][2]int64
	if req.Header.Get("Range") != "" {
		req = req.Clone(req.Context()) // its Range is rewritten below, not the caller's
	}
	if req.Method != http.MethodGet {
		req.Header.Del("Range") // ranges are defined for GET only (RFC 9110, 14.2)
	}
	if req.Method == http.MethodGet && !etagMatch(req.Header.Get("If-None-Match"), etag) {
		var ask rangeAnswer
		windows, ask = parseRanges(req.Header.Get("Range"), m.Size)
		if ifr := req.Header.Get("If-Range"); ifr != "" && ifr != etag {
			ask = rangeWhole // the ranges were of another version
		}
		switch ask {
		case rangeWhole:
			windows = [][2]int64{{0, m.Size}}
			req.Header.Del("Range")
		case rangeUnsatisfiable:
			h.Set("Content-Range", fmt.Sprintf("bytes */%d", m.Size))
			fail(http.StatusRequestedRangeNotSatisfiable, fmt.Errorf("range %q cannot be satisfied for the %d-byte file", req.Header.Get("Range"), m.Size))
			return
		case rangeParts:
			// http.ServeContent serves them; it is given only the
			// satisfiable ones (it answers bytes=-0 with an empty 206).
			req.Header.Set("Range", formatRanges(windows))
		}
		first := make([][2]int64, len(windows))
		for i, rg := range windows {
			first[i] = [2]int64{rg[0], min(rg[1], rg[0]+readAhead)}
		}
		if err := f.Prefetch(ctx, first); err != nil {
			fail(errorStatus(err), err)
			return
		}
	}
	rs := f.NewReadSeeker(ctx, windows)
	http.ServeContent(w, req, "", time.Time{}, rs)
	if rs.err != nil {
		info.err = rs.err // headers were sent: the connection is cut short
	}
}

// resolve maps /<rev>/<path> to a manifest, trying the longest rev first.
func (s *Server) resolve(urlPath string) (*manifest.Manifest, string, int, error) {
	segs := strings.Split(strings.TrimPrefix(urlPath, "/"), "/")
	if len(segs) < 2 {
		return nil, "", http.StatusNotFound, errors.New("not found: use /<rev>/<path>")
	}
	for _, sg := range segs {
		if sg == "" || sg == "." || sg == ".." {
			return nil, "", http.StatusBadRequest, fmt.Errorf("bad path %q", urlPath)
		}
	}
	s.gitMu.Lock()
	defer s.gitMu.Unlock()
	badPath := false
	for i := len(segs) - 1; i >= 1; i-- {
		rev, p := strings.Join(segs[:i], "/"), strings.Join(segs[i:], "/")
		if manifest.CheckPath(p) != nil {
			badPath = true
			continue
		}
		c, err := s.r.git.resolve(rev)
		if err != nil {
			continue
		}
		blobs, ok := s.blobs[c.Hash]
		if !ok {
			if blobs, err = s.r.git.manifestBlobs(c); err != nil {
				return nil, "", http.StatusInternalServerError, err
			}
			if len(s.blobs) >= 16 {
				clear(s.blobs)
			}
			s.blobs[c.Hash] = blobs
		}
		h, ok := blobs[p]
		if !ok {
			continue
		}
		m, _, err := s.r.git.readManifestBlob(h, p)
		if err != nil {
			return nil, "", http.StatusInternalServerError, err
		}
		return m, c.Hash.String(), 0, nil
	}
	if badPath {
		return nil, "", http.StatusBadRequest, fmt.Errorf("bad path %q: not a clean relative path inside the work tree", urlPath)
	}
	return nil, "", http.StatusNotFound, fmt.Errorf("not found: no revision in %q names a tracked file", urlPath)
}

var hexCommit = regexp.MustCompile(`^/[0-9a-f]{40}/`)

// isCommitID reports whether the URL named the commit by its full id, so
// the answer never changes.
func isCommitID(urlPath, commit string) bool {
	return hexCommit.MatchString(urlPath) && strings.HasPrefix(urlPath[1:], commit)
}

func errorStatus(err error) int {
	switch {
	case errors.Is(err, ErrIntegrity), errors.Is(err, store.ErrCorrupt):
		return http.StatusInternalServerError
	case errors.Is(err, context.Canceled):
		return 499 // client went away; nobody reads this
	}
	return http.StatusBadGateway // the store failed us
}

func contentType(format string) string {
	switch format {
	case "tiff":
		return "image/tiff"
	case "parquet":
		return "application/vnd.apache.parquet"
	case "flatgeobuf":
		return "application/flatgeobuf"
	}
	return "application/octet-stream"
}

func etagMatch(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(t), "W/"))
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}

// rangeAnswer is how a GET answers its Range header (RFC 9110, 14.2).
type rangeAnswer int

const (
	rangeWhole         rangeAnswer = iota // no Range, or one to ignore: 200 with the whole file
	rangeParts                            // the satisfiable ranges: 206
	rangeUnsatisfiable                    // 416 with Content-Range: bytes */size
)

// parseRanges reads a Range header for a size-byte file into the [start,
// end) windows to send, in the order asked, per RFC 9110, 14.1.2:
// a range that starts at or past the end, or a suffix of length 0, is
// unsatisfiable and left out; a range or suffix reaching past the end is
// cut at it. No satisfiable range, or a malformed header (a range ending
// before its start, a number that is not one), is answered with 416. A
// unit other than bytes is ignored (the whole file), and so is any Range
// on an empty file (there is nothing to cut; as http.ServeContent does).
func parseRanges(h string, size int64) ([][2]int64, rangeAnswer) {
	unit, spec, ok := strings.Cut(h, "=")
	if h == "" || !ok || !strings.EqualFold(strings.TrimSpace(unit), "bytes") || size == 0 {
		return nil, rangeWhole
	}
	var out [][2]int64
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue // empty list elements are allowed (RFC 9110, 5.6.1)
		}
		a, b, ok := strings.Cut(part, "-")
		if !ok {
			return nil, rangeUnsatisfiable
		}
		a, b = strings.TrimSpace(a), strings.TrimSpace(b)
		if a == "" {
			n, ok := digits(b)
			if !ok {
				return nil, rangeUnsatisfiable
			}
			if n > 0 {
				out = append(out, [2]int64{size - min(n, size), size})
			}
			continue
		}
		start, ok := digits(a)
		if !ok {
			return nil, rangeUnsatisfiable
		}
		end := size
		if b != "" {
			last, ok := digits(b)
			if !ok || last < start {
				return nil, rangeUnsatisfiable
			}
			end = min(last, size-1) + 1
		}
		if start < size {
			out = append(out, [2]int64{start, end})
		}
	}
	if len(out) == 0 {
		return nil, rangeUnsatisfiable
	}
	return out, rangeParts
}

// digits parses a non-empty run of decimal digits (no sign, no space).
// Numbers past int64 count as the largest one: a range may name any
// position.
func digits(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return math.MaxInt64, true // out of range; the digits are fine
	}
	return n, true
}

// formatRanges spells windows as a Range header.
func formatRanges(windows [][2]int64) string {
	b := []byte("bytes=")
	for i, w := range windows {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, w[0], 10)
		b = append(b, '-')
		b = strconv.AppendInt(b, w[1]-1, 10)
	}
	return string(b)
}
