package azure

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store/internal/retry"
)

// rangeError is the error for a range outside an object of the given size.
func rangeError(off, length, size int64) error {
	return fmt.Errorf("range at %d length %d is outside the %d-byte object", off, length, size)
}

// Get returns a reader for length bytes of object id from off (length < 0:
// to the end). The reader holds one of the store's connection slots until
// it is closed or has reached the end, so close it promptly. When the
// connection fails or stalls while reading, the reader asks again from
// where it stopped (with the usual retries); it returns
// io.ErrUnexpectedEOF rather than fewer bytes than the range holds.
//
// A packed object is read with a ranged read of its pack. An object that
// is neither packed nor loose is looked for in packs committed since the
// indexes were loaded.
func (s *Store) Get(ctx context.Context, id hashing.ID, off, length int64) (io.ReadCloser, error) {
	return s.Packs.Get(ctx, id, off, length)
}

// getLoose is Get of the loose object.
func (s *Store) getLoose(ctx context.Context, id hashing.ID, off, length int64) (io.ReadCloser, error) {
	if off < 0 {
		return nil, s.failed("get", id, fmt.Errorf("negative offset %d", off))
	}
	if length == 0 {
		// Nothing to read; the object must exist and off be within it.
		info, err := s.statKey(ctx, s.key(id))
		if err != nil {
			return nil, s.failed("get", id, err)
		}
		if off > info.Size {
			return nil, s.failed("get", id, rangeError(off, length, info.Size))
		}
		return io.NopCloser(strings.NewReader("")), nil
	}
	end := int64(-1)
	if length > 0 {
		end = off + length
	}
	return s.openRange(ctx, id, s.key(id), off, end)
}

// openRange returns a reader of [off, end) of blob key (end < 0: to its
// end), which holds object id; it holds a connection slot.
func (s *Store) openRange(ctx context.Context, id hashing.ID, key string, off, end int64) (io.ReadCloser, error) {
	if err := s.pol.Acquire(ctx); err != nil {
		return nil, s.failedAt("get", id, key, err)
	}
	r := &reader{s: s, ctx: ctx, id: id, key: key, blob: s.client.NewBlobClient(key), off: off, end: end, holding: true}
	if err := r.open(); err != nil {
		r.finish(err)
		return nil, err
	}
	return r, nil
}

// reader reads [off, end) of a blob (end < 0: to its end, learnt from the
// first answer), asking again after a transient failure.
type reader struct {
	s       *Store
	ctx     context.Context
	id      hashing.ID
	key     string // the loose object's blob, or its pack's
	blob    *blob.Client
	off     int64 // next byte to read
	end     int64
	body    io.ReadCloser
	watch   *time.Timer        // cancels the body after Timeout without progress
	cancel  context.CancelFunc // of the body's request
	stalled *atomic.Bool       // set when watch fired
	holding bool               // has a connection slot
	fails   int                // reopenings without progress
	mu      sync.Mutex
	err     error // sticky error, or io.EOF
}

// open issues the GET for [off, end) with retries.
func (r *reader) open() error {
	start := r.off
	var lastErr error
	err := r.s.pol.Attempts(r.ctx, retry.NoSlot, func(ctx context.Context) error {
		err := r.get()
		lastErr = err
		return err
	})
	if err == nil {
		return nil
	}
	if !isBadRange(lastErr) {
		return r.s.failedAt("get", r.id, r.key, err)
	}
	// off is at or past the end (or the blob is empty): which?
	info, err := r.s.statKey(r.ctx, r.key)
	switch {
	case err != nil:
		return r.s.failedAt("get", r.id, r.key, err)
	case r.end < 0 && r.off == info.Size:
		r.end = r.off // at exactly the end: nothing to read
		return nil
	case r.end < 0:
		return r.s.failedAt("get", r.id, r.key, rangeError(r.off, -1, info.Size))
	default:
		return r.s.failedAt("get", r.id, r.key, rangeError(start, r.end-start, info.Size))
	}
}

// get is one attempt of open: the GET, its answer checked, and a watch
// that cancels the body when it stalls for Options.Timeout.
func (r *reader) get() error {
	ctx, cancel := context.WithCancel(r.ctx)
	rng := blob.HTTPRange{Offset: r.off}
	if r.end >= 0 {
		rng.Count = r.end - r.off
	}
	resp, err := r.blob.DownloadStream(ctx, &blob.DownloadStreamOptions{Range: rng})
	if err != nil {
		cancel()
		return err
	}
	total, err := blobSize(resp.ContentRange, resp.ContentLength, rng != blob.HTTPRange{})
	if err == nil && r.end > total {
		err = rangeError(r.off, r.end-r.off, total)
	}
	if err != nil {
		resp.Body.Close()
		cancel()
		return err
	}
	if r.end < 0 {
		r.end = total
	}
	stalled := new(atomic.Bool)
	r.watch = time.AfterFunc(r.s.opt.Timeout, func() { stalled.Store(true); cancel() })
	r.body, r.stalled, r.cancel = resp.Body, stalled, cancel
	return nil
}

// blobSize returns the blob's full size from a GET answer.
func blobSize(contentRange *string, contentLength *int64, ranged bool) (int64, error) {
	if cr := deref(contentRange); cr != "" {
		// bytes first-last/total
		if i := strings.LastIndexByte(cr, '/'); i >= 0 {
			if n, err := strconv.ParseInt(cr[i+1:], 10, 64); err == nil && n >= 0 {
				return n, nil
			}
		}
		return 0, fmt.Errorf("bad Content-Range %q in answer", cr)
	}
	if ranged {
		return 0, errors.New("ranged get answered without Content-Range")
	}
	if contentLength == nil || *contentLength < 0 {
		return 0, errors.New("no Content-Length in answer")
	}
	return *contentLength, nil
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
				r.finish(err)
				return 0, err
			}
			continue
		}
		n, err := r.read(p[:min(int64(len(p)), r.end-r.off)])
		if err == nil {
			return n, nil
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
			return n, nil // ask again at the next call
		}
	}
}

// read reads from the body, pushing its stall watch forward on progress;
// after a failure the body is closed and err says why, a stall as
// retry.ErrStalled and an early end as io.ErrUnexpectedEOF.
func (r *reader) read(p []byte) (int, error) {
	n, err := r.body.Read(p)
	r.off += int64(n)
	if n > 0 {
		r.watch.Reset(r.s.opt.Timeout) // fired already: the next read fails
	}
	if err == nil || err == io.EOF && r.off >= r.end {
		return n, nil // EOF is reported by the next call, from off and end
	}
	if r.stalled.Load() {
		err = fmt.Errorf("%w for %v: %w", retry.ErrStalled, r.s.opt.Timeout, io.ErrUnexpectedEOF)
	} else if err == io.EOF {
		err = io.ErrUnexpectedEOF // the answer was shorter than the range
	}
	r.closeBody()
	return n, err
}

// closeBody closes the body and ends its watch.
func (r *reader) closeBody() {
	if r.body == nil {
		return
	}
	r.watch.Stop()
	r.cancel()
	r.body.Close()
	r.body = nil
}

// finish records the final error and frees the connection slot.
func (r *reader) finish(err error) {
	r.err = err
	r.closeBody()
	if r.holding {
		r.holding = false
		r.s.pol.Release()
	}
}

func (r *reader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil || r.holding {
		r.finish(errors.New("read after close"))
	}
	return nil
}
