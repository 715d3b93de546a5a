package serve

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// reviewPrefix is where the review page of any A..B is served.
const reviewPrefix = "/review/"

// isReview reports whether urlPath asks for a review page
// (/review/A..B); a revision named "review" still serves its files.
func isReview(urlPath string) bool {
	rest, ok := strings.CutPrefix(urlPath, reviewPrefix)
	return ok && strings.Contains(rest, "..") && !strings.Contains(rest, "/")
}

// serveReview answers /review/A..B with the page diff A B --format html
// writes (Options.Review, else Repo.WriteReview). Both revisions must
// resolve (404 otherwise); the page is built under the Git lock, as every
// read of Git here is.
func (s *Server) serveReview(ctx context.Context, w http.ResponseWriter, req *http.Request, info *reqInfo) {
	fail := func(code int, err error) {
		info.err = err
		http.Error(w, err.Error(), code)
	}
	a, b, _ := strings.Cut(strings.TrimPrefix(req.URL.Path, reviewPrefix), "..")
	if a == "" || b == "" || strings.HasPrefix(b, ".") {
		fail(http.StatusBadRequest, fmt.Errorf("review %q: use /review/A..B", req.URL.Path))
		return
	}
	// Options.Review may pass the revisions on to a program's command
	// line, where a leading "-" would read as an option; Git refuses
	// branch and tag names that begin so.
	if strings.HasPrefix(a, "-") || strings.HasPrefix(b, "-") {
		fail(http.StatusBadRequest, fmt.Errorf("review %q: a revision cannot begin with \"-\"", req.URL.Path))
		return
	}
	s.gitMu.Lock()
	defer s.gitMu.Unlock()
	for _, rev := range []string{a, b} {
		if _, err := s.r.Snapshot(rev); err != nil {
			fail(http.StatusNotFound, fmt.Errorf("review: revision %s: %w", rev, err))
			return
		}
	}
	write := s.opt.Review
	if write == nil {
		write = func(ctx context.Context, w io.Writer, from, to string) error {
			return s.r.WriteReview(ctx, w, from, to, nil)
		}
	}
	var page bytes.Buffer
	if err := write(ctx, &page, a, b); err != nil {
		fail(errorStatus(err), fmt.Errorf("review %s..%s: %w", a, b, err))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	if req.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(page.Bytes())
}
