package gcs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"cloud.google.com/go/storage"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store/internal/retry"
)

// Get returns a reader for length bytes of object id from off (length < 0:
// to the end), read with ranged GETs. The reader holds one of the store's
// connection slots until it is closed or has reached the end, so close it
// promptly. A connection that fails while reading is reopened where it
// stopped, with backoff, until Options.Retries reopenings in a row brought
// nothing; the reader returns an error rather than fewer bytes than the
// range holds.
//
// A packed object is read with a ranged GET of its pack. An object that is
// neither packed nor loose is looked for in packs committed since the
// indexes were loaded.
func (s *Store) Get(ctx context.Context, id hashing.ID, off, length int64) (io.ReadCloser, error) {
	return s.Packs.Get(ctx, id, off, length)
}

// getLoose is Get of the loose object.
func (s *Store) getLoose(ctx context.Context, id hashing.ID, off, length int64) (io.ReadCloser, error) {
	end := int64(-1)
	if length > 0 {
		end = off + length
	}
	return s.openRange(ctx, id, s.key(id), off, end, length)
}

// openRange returns a reader of [off, end) of object key (end < 0: to its
// end), which holds object id; length is what the caller asked for (0:
// nothing, the object must exist and off be within it).
func (s *Store) openRange(ctx context.Context, id hashing.ID, key string, off, end, length int64) (io.ReadCloser, error) {
	if off < 0 {
		return nil, s.failedAt("get", id, key, fmt.Errorf("negative offset %d", off))
	}
	if err := s.pol.Acquire(ctx); err != nil {
		return nil, s.failedAt("get", id, key, err)
	}
	if length == 0 {
		// Nothing to read; the object must exist and off be within it.
		return s.emptyRange(ctx, id, key, off, length)
	}
	// The SDK reopens a broken read by itself, without backoff or bound
	// (a server that cuts every answer short is asked again at once,
	// forever): the reader does it instead.
	budget := &readBudget{limit: int64(s.opt.Retries)}
	r := &reader{s: s, ctx: context.WithValue(ctx, budgetKey{}, budget), budget: budget, id: id, key: key, off: off, end: end,
		obj: s.bkt.Object(key).Retryer(storage.WithPolicy(storage.RetryNever))}
	err := r.open()
	if code(err) == http.StatusRequestedRangeNotSatisfiable {
		return s.emptyRange(ctx, id, key, off, length)
	}
	if err != nil {
		s.pol.Release()
		return nil, s.failedAt("get", id, key, err)
	}
	return r, nil
}

// emptyRange answers a Get that the server found outside the object, or
// that asks for nothing: an empty reader when off is at most the object's
// size (a length < 0 to the end, or 0), else a range error. It releases
// the caller's connection slot.
func (s *Store) emptyRange(ctx context.Context, id hashing.ID, key string, off, length int64) (io.ReadCloser, error) {
	defer s.pol.Release()
	attrs, err := s.bkt.Object(key).Attrs(ctx)
	switch {
	case err != nil:
		return nil, s.failedAt("get", id, key, err)
	case off > attrs.Size || length > 0:
		return nil, s.failedAt("get", id, key, rangeError(off, length, attrs.Size))
	}
	return io.NopCloser(strings.NewReader("")), nil
}

// reader reads [off, end) of an object (end < 0: to the object's end,
// learnt from the first answer), reopening the range after a transient
// failure. It frees its connection slot once, at the end or at Close.
type reader struct {
	s      *Store
	ctx    context.Context // carries budget
	budget *readBudget
	id     hashing.ID
	key    string                // the loose object's, or its pack's
	obj    *storage.ObjectHandle // without SDK retries
	off    int64                 // next byte to read
	end    int64

	mu    sync.Mutex
	body  *storage.Reader
	fails int   // reopenings in a row without progress
	err   error // sticky: io.EOF, or why the read failed
}

// open issues the ranged GET for [off, end), retrying transient failures
// with backoff up to Options.Retries attempts within RetryTime (the
// caller holds the connection slot).
func (r *reader) open() error {
	return r.s.pol.Attempts(r.ctx, retry.NoSlot, func(ctx context.Context) error {
		n := int64(-1)
		if r.end >= 0 {
			n = r.end - r.off
		}
		r.budget.n.Store(0)
		body, err := r.obj.NewRangeReader(ctx, r.off, n)
		if err != nil {
			return err
		}
		size := body.Attrs.Size
		if r.end < 0 {
			r.end = size
		}
		if r.off > size || r.end > size {
			_ = body.Close()
			return rangeError(r.off, n, size)
		}
		r.body = body
		return nil
	})
}

func (r *reader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		if r.err != nil {
			return 0, r.err
		}
		if r.off >= r.end {
			r.finish(io.EOF)
			return 0, io.EOF
		}
		if len(p) == 0 {
			return 0, nil
		}
		if r.body == nil {
			if err := r.open(); err != nil {
				err = r.s.failedAt("get", r.id, r.key, err)
				r.finish(err)
				return 0, err
			}
		}
		if rest := r.end - r.off; int64(len(p)) > rest {
			p = p[:rest]
		}
		n, err := r.body.Read(p)
		r.off += int64(n)
		if n > 0 {
			r.budget.n.Store(0)
		}
		if err == nil || n > 0 && err == io.EOF {
			return n, nil // EOF is reported by the next call, from off and end
		}
		_ = r.body.Close()
		r.body = nil
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // the answer was shorter than the range
		}
		if n > 0 {
			r.fails = 0
		} else {
			r.fails++
		}
		if err := r.s.pol.Resume(r.ctx, err, n, r.fails); err != nil {
			err = r.s.failedAt("get", r.id, r.key, err)
			r.finish(err)
			return n, err
		}
		if n > 0 {
			return n, nil // reopen at the next call
		}
	}
}

// finish records the final error and frees the connection slot.
func (r *reader) finish(err error) {
	if r.err != nil {
		return
	}
	r.err = err
	if r.body != nil {
		_ = r.body.Close()
		r.body = nil
	}
	r.s.pol.Release()
}

func (r *reader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.finish(errors.New("read after close"))
	return nil
}

// errNoProgress fails a read whose reopenings bring no bytes.
var errNoProgress = errors.New("no bytes from repeated requests")

// readBudget counts the requests of one reader since it last received
// bytes. The SDK reopens a broken read inside Reader.Read at once and
// without bound; budgetTransport spaces those reopenings with backoff and
// fails them once limit requests in a row brought nothing.
type readBudget struct {
	n     atomic.Int64
	limit int64
}

type budgetKey struct{}

// budgetTransport applies the readBudget of a request's context.
type budgetTransport struct{ base http.RoundTripper }

func (t budgetTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if b, ok := req.Context().Value(writeBudgetKey{}).(*writeBudget); ok {
		return b.roundTrip(t.base, req)
	}
	if b, ok := req.Context().Value(budgetKey{}).(*readBudget); ok {
		k := b.n.Add(1)
		if k > b.limit {
			return nil, fmt.Errorf("%w: %d requests in a row", errNoProgress, k-1)
		}
		if k > 1 {
			if err := retry.Sleep(req.Context(), retry.Backoff(int(k-1))); err != nil {
				return nil, err
			}
		}
	}
	return t.base.RoundTrip(req)
}

// errWriteFailed fails an upload whose requests failed limit times in a row.
var errWriteFailed = errors.New("upload failed on every attempt")

// writeBudget counts the failed requests in a row of one upload. The SDK
// retries a one-request upload (an object up to ChunkSize) with no bound
// but its context, ignoring MaxAttempts and MaxRetryDuration: a pack
// upload that fails every time would hang its batch for good.
// budgetTransport fails the request after limit failures in a row, with
// an error the SDK does not retry.
type writeBudget struct {
	n     atomic.Int64
	limit int64
	last  atomic.Value // error: of the last failed request
}

type writeBudgetKey struct{}

// withWriteBudget returns ctx carrying a writeBudget of limit failures.
func withWriteBudget(ctx context.Context, limit int) context.Context {
	return context.WithValue(ctx, writeBudgetKey{}, &writeBudget{limit: int64(max(limit, 1))})
}

func (b *writeBudget) roundTrip(base http.RoundTripper, req *http.Request) (*http.Response, error) {
	if k := b.n.Load(); k >= b.limit {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		last, _ := b.last.Load().(error)
		return nil, fmt.Errorf("%w: %d in a row, the last: %w", errWriteFailed, k, last)
	}
	resp, err := base.RoundTrip(req)
	switch {
	case err != nil:
		b.last.Store(err)
		b.n.Add(1)
	case retry.TransientStatus(resp.StatusCode):
		b.last.Store(fmt.Errorf("%s %s: %s", req.Method, req.URL.Redacted(), resp.Status))
		b.n.Add(1)
	default:
		b.n.Store(0)
	}
	return resp, err
}
