package repo

import (
	"context"
	"errors"
	"fmt"

	"github.com/chunkvc/chunkvc/repo/internal/gc"
	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
	"github.com/chunkvc/chunkvc/repo/internal/reach"
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
		idx, rerr := x.r.expiryIndex(ctx)
		if rerr != nil {
			return err // the records cannot say more than the miss
		}
		if x.rec, rerr = idx.Find(x.c); rerr != nil {
			return err
		}
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

// expiryIndex reads the expiry records of the stores gc --expire
// deletes from (the configured store and the embedded one).
func (r *Repo) expiryIndex(ctx context.Context) (*gc.Index, error) {
	recs, err := gc.ReadRecords(ctx, r.Store, r.read.Local)
	if err != nil {
		return nil, err
	}
	return gc.NewIndex(recs, r.git), nil
}

// pushSet returns the objects commits reference, and among them those
// only commits an expiry record names reference (mayLack): gc --expire
// deleted those on purpose, so a push of that history (to a new remote,
// say) must not stop at them; their manifests go along in Git. Where a
// store still holds one (a commit made after the gc with an older date
// than its cut) it is uploaded all the same: the record says why an
// object may be missing, never that it is.
func (r *Repo) pushSet(ctx context.Context, commits []*gitdb.Commit) (need, mayLack reach.Set, err error) {
	idx, err := r.expiryIndex(ctx)
	if err != nil {
		return nil, nil, err
	}
	var expired, live []*gitdb.Commit
	for _, c := range commits {
		rec, err := idx.Find(c)
		if err != nil {
			return nil, nil, err
		}
		if rec != nil {
			expired = append(expired, c)
		} else {
			live = append(live, c)
		}
	}
	commits = live
	if need, err = reach.Referenced(r.git, commits); err != nil {
		return nil, nil, err
	}
	old, err := reach.Referenced(r.git, expired)
	if err != nil {
		return nil, nil, err
	}
	mayLack = reach.Set{}
	for id, u := range old {
		if !need.Has(id) {
			need[id], mayLack[id] = u, u
		}
	}
	return need, mayLack, nil
}
