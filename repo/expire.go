package repo

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/chunkvc/chunkvc/repo/internal/gc"
	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
	"github.com/chunkvc/chunkvc/store"
)

// ErrExpired means a version's chunks were deleted by gc --expire: its
// commit is older than the retention window and no kept ref names it. Its
// manifest stays in Git (log, diff and digests still show what it was);
// its bytes are gone.
var ErrExpired = errors.New("expired by retention")

// ExpiredError is a file version that gc --expire left unreadable.
type ExpiredError struct {
	Path   string
	Commit string
	Record *gc.Record
	Err    error // the read that failed
}

func (e *ExpiredError) Error() string {
	return fmt.Sprintf("%s at %s: expired by gc on %s; retention %s (cut %s; log and diff still show the version)",
		e.Path, e.Commit[:min(len(e.Commit), 6)], e.Record.Date.Format("2006-01-02"), e.Record.Window, e.Record.Cut.Format("2006-01-02 15:04 MST"))
}

// Unwrap gives ErrExpired and the read's own error.
func (e *ExpiredError) Unwrap() []error { return []error{ErrExpired, e.Err} }

// expiryCheck explains missing chunks of one commit's versions, reading
// the expiry records once, at the first miss.
type expiryCheck struct {
	r      *Repo
	c      *gitdb.Commit
	loaded bool
	rec    *gc.Record
}

// explain returns err as an *ExpiredError when it is a missing object of
// path p (store.ErrNotFound) and a recorded gc --expire expired the
// commit; err itself otherwise.
func (x *expiryCheck) explain(ctx context.Context, p string, err error) error {
	var done *ExpiredError
	if err == nil || x.c == nil || !errors.Is(err, store.ErrNotFound) || errors.As(err, &done) {
		return err
	}
	if !x.loaded {
		x.loaded = true
		recs, rerr := x.r.expiries(ctx)
		if rerr != nil {
			return err // the records cannot say more than the miss
		}
		x.rec = gc.FindRecord(recs, x.c)
	}
	if x.rec == nil {
		return err
	}
	return &ExpiredError{Path: p, Commit: x.c.Hash.String(), Record: x.rec, Err: err}
}

// explainAll applies explain to each failed file.
func (x *expiryCheck) explainAll(ctx context.Context, failed []fileError) {
	for i, f := range failed {
		failed[i].err = x.explain(ctx, f.path, f.err)
	}
}

// expiries reads the expiry records of the stores gc --expire deletes
// from (the configured store and the embedded one).
func (r *Repo) expiries(ctx context.Context) ([]*gc.Record, error) {
	return gc.ReadRecords(ctx, r.Store, r.read.Local)
}

// withoutExpired drops the commits an expiry record names: their chunks
// were deleted on purpose, and a push that wanted them all would fail on
// history the repository chose to let go (its manifests go along in Git).
func (r *Repo) withoutExpired(ctx context.Context, commits []*gitdb.Commit) ([]*gitdb.Commit, error) {
	recs, err := r.expiries(ctx)
	if err != nil || len(recs) == 0 {
		return commits, err
	}
	return slices.DeleteFunc(commits, func(c *gitdb.Commit) bool { return gc.FindRecord(recs, c) != nil }), nil
}
