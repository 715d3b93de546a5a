package serve

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"path"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo"
	"github.com/chunkvc/chunkvc/store"
)

// Options configures a Server.
type Options struct {
	// Token, when set, is required on every request, as
	// "Authorization: Bearer TOKEN" or a "token=TOKEN" query parameter.
	Token string
	// Log, when set, receives one JSON object per request, one per line.
	Log io.Writer
	// MemBytes bounds chunks kept in memory (0 = repo.DefaultChunkMemory).
	MemBytes int64
	// FetchLimit bounds concurrent chunk reads (0 = repo.DefaultFetchLimit).
	FetchLimit int
	// Review, when set, writes the review page of revisions from..to to
	// w for /review/A..B (both resolve, neither begins with "-"); it
	// stands in for Repo.WriteReview without a window reader, whose pages
	// warn about rasters Go cannot decode (JPEG, WebP) instead of
	// previewing them. It runs under the server's Git lock.
	Review func(ctx context.Context, w io.Writer, from, to string) error
}

// Stats is what /debug/stats reports.
type Stats struct {
	Requests    int64   `json:"requests"`
	Errors      int64   `json:"errors"` // answers with status ≥ 500
	BytesServed int64   `json:"bytes_served"`
	UptimeSec   float64 `json:"uptime_s"`
	repo.ReadStats
}

// Server answers HTTP/1.1 GET and HEAD for /<rev>/<path>: any branch, tag
// or commit, any tracked file, assembled on demand from the layout and the
// chunks (verified before a byte is sent). Range (single, multiple, suffix,
// open-ended), If-None-Match, If-Range and HEAD follow net/http's
// ServeContent; the ETag is the file's BLAKE3 digest. /debug/stats returns
// Stats as JSON. A rev containing "/" (feature/x) is found by trying
// the longest prefix of the URL path that resolves and names a tracked file.
// A path inside a tracked dataset names one of its members (dataset.go).
type Server struct {
	r     *repo.Repo
	opt   Options
	cr    *repo.ChunkReader
	start time.Time

	requests, errors, bytesServed atomic.Int64

	gitMu  sync.Mutex                // snapshots read Git objects, which is not safe for concurrent use
	snaps  map[string]*repo.Snapshot // by commit id
	sets   datasetCache              // under gitMu
	logMu  sync.Mutex
	closed atomic.Bool
}

// New returns a Server for r.
func New(r *repo.Repo, opt Options) *Server {
	return &Server{r: r, opt: opt, cr: r.NewChunkReader(opt.MemBytes, opt.FetchLimit), start: time.Now(),
		snaps: map[string]*repo.Snapshot{}}
}

// Stats returns the counters so far.
func (s *Server) Stats() Stats {
	return Stats{
		Requests: s.requests.Load(), Errors: s.errors.Load(), BytesServed: s.bytesServed.Load(),
		UptimeSec: time.Since(s.start).Seconds(), ReadStats: s.cr.Stats(),
	}
}

// CheckAddr refuses to bind a non-loopback address without a token.
func CheckAddr(addr, token string) error {
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
	ctx, counted := repo.CountReads(req.Context())
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
	rs := counted()
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
	if isReview(req.URL.Path) {
		s.serveReview(ctx, w, req, info)
		return
	}
	t, commit, code, err := s.resolve(ctx, req.URL.Path)
	if err != nil {
		fail(code, err)
		return
	}
	info.commit = commit
	if t.git != nil {
		s.serveGitFile(w, req, t, commit)
		return
	}
	m := t.m
	var f *repo.FileReader
	if t.lay != nil {
		f = s.cr.OpenLayout(m, t.lay)
	} else if f, err = s.cr.OpenFile(ctx, m); err != nil {
		fail(errorStatus(err), err)
		return
	}
	etag := `"` + m.Digest.String() + `"`
	h := w.Header()
	setHeaders(h, req, etag, t.mediaType, commit)
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
			first[i] = [2]int64{rg[0], min(rg[1], rg[0]+repo.ReadAhead)}
		}
		if err := f.Prefetch(ctx, first); err != nil {
			fail(errorStatus(err), err)
			return
		}
	}
	rs := f.NewReadSeeker(ctx, windows)
	http.ServeContent(w, req, "", time.Time{}, rs)
	if err := rs.Err(); err != nil {
		info.err = err // headers were sent: the connection is cut short
	}
}

// target is what a URL names: a tracked file (lay nil: m's own layout),
// a member of a dataset (m a stand-in manifest, lay its bytes), or a
// file Git itself tracks (git its bytes, blob its Git id).
type target struct {
	m         *manifest.Manifest
	lay       *manifest.Layout
	git       []byte
	blob      string
	mediaType string
}

// setHeaders sets what every answer carries: its ETag, media type, the
// commit it comes from, and a cache lifetime that is forever only when
// the URL named the commit by its full id.
func setHeaders(h http.Header, req *http.Request, etag, mediaType, commit string) {
	h.Set("ETag", etag)
	h.Set("Content-Type", mediaType)
	h.Set("X-Chunkvc-Commit", commit)
	if isCommitID(req.URL.Path, commit) {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
}

// maxGitFile bounds the Git-tracked files serve answers: they are read
// whole into memory (a lake's _manifest.json, a README), unlike data.
const maxGitFile = 64 << 20

// serveGitFile answers with a file Git tracks at the commit: its blob id
// is its ETag, ranges as for data.
func (s *Server) serveGitFile(w http.ResponseWriter, req *http.Request, t target, commit string) {
	setHeaders(w.Header(), req, `"git-`+t.blob+`"`, t.mediaType, commit)
	http.ServeContent(w, req, "", time.Time{}, bytes.NewReader(t.git))
}

// resolve maps /<rev>/<path> to a file or a dataset member, trying the
// longest rev first.
func (s *Server) resolve(ctx context.Context, urlPath string) (target, string, int, error) {
	segs := strings.Split(strings.TrimPrefix(urlPath, "/"), "/")
	if len(segs) < 2 {
		return target{}, "", http.StatusNotFound, errors.New("not found: use /<rev>/<path>")
	}
	for _, sg := range segs {
		if sg == "" || sg == "." || sg == ".." {
			return target{}, "", http.StatusBadRequest, fmt.Errorf("bad path %q", urlPath)
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
		snap, err := s.r.Snapshot(rev)
		if err != nil {
			continue
		}
		if kept, ok := s.snaps[snap.Commit()]; ok {
			snap = kept // its files are listed already
		} else {
			if len(s.snaps) >= 16 {
				clear(s.snaps)
			}
			s.snaps[snap.Commit()] = snap
		}
		m, ok, err := snap.Manifest(p)
		if err != nil {
			return target{}, "", http.StatusInternalServerError, err
		}
		if ok && !repo.IsDataset(m) {
			return target{m: m, mediaType: formats.MediaType(m.Format)}, snap.Commit(), 0, nil
		}
		if ok { // the dataset's directory itself: no listings
			return target{}, "", http.StatusNotFound, fmt.Errorf("not found: %s is a dataset; ask for its members (%s/.zmetadata)", p, p)
		}
		t, found, code, err := s.member(ctx, snap, p)
		if found || err != nil {
			return t, snap.Commit(), code, err
		}
		// Last, a file Git tracks itself: what pins a lake's snapshot
		// (its _manifest.json) is often one.
		data, blob, ok, err := snap.GitFile(p, maxGitFile)
		if err != nil {
			return target{}, "", http.StatusInternalServerError, err
		}
		if ok {
			mt := mime.TypeByExtension(path.Ext(p))
			if mt == "" {
				mt = "application/octet-stream"
			}
			return target{git: data, blob: blob, mediaType: mt}, snap.Commit(), 0, nil
		}
	}
	if badPath {
		return target{}, "", http.StatusBadRequest, fmt.Errorf("bad path %q: not a clean relative path inside the work tree", urlPath)
	}
	return target{}, "", http.StatusNotFound, fmt.Errorf("not found: no revision in %q names a tracked file or a file in Git", urlPath)
}

var hexCommit = regexp.MustCompile(`^/[0-9a-f]{40}/`)

// isCommitID reports whether the URL named the commit by its full id, so
// the answer never changes.
func isCommitID(urlPath, commit string) bool {
	return hexCommit.MatchString(urlPath) && strings.HasPrefix(urlPath[1:], commit)
}

func errorStatus(err error) int {
	switch {
	case errors.Is(err, repo.ErrIntegrity), errors.Is(err, store.ErrCorrupt):
		return http.StatusInternalServerError
	case errors.Is(err, context.Canceled):
		return 499 // client went away; nobody reads this
	}
	return http.StatusBadGateway // the store failed us
}
