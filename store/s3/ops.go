package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/minio/minio-go/v7"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/internal/retry"
)

// isNotFound reports whether err is S3's answer for a missing object.
func isNotFound(err error) bool {
	var er minio.ErrorResponse
	return errors.As(err, &er) && (er.Code == minio.NoSuchKey || er.StatusCode == http.StatusNotFound && er.Code != minio.NoSuchBucket)
}

// isBadRange reports whether err is S3's answer for a range outside the object.
func isBadRange(err error) bool {
	var er minio.ErrorResponse
	return errors.As(err, &er) && (er.Code == minio.InvalidRange || er.StatusCode == http.StatusRequestedRangeNotSatisfiable)
}

// rangeError is the error for a range outside an object of the given size.
func rangeError(off, length, size int64) error {
	return fmt.Errorf("range at %d length %d is outside the %d-byte object", off, length, size)
}

// Put stores data under id. An object already there with the same size is
// kept as it is (nothing is sent); one of another size is replaced. Objects
// up to Options.PartSize go in one PUT, larger ones in a multipart upload;
// the request carries the length and a checksum the server verifies (a
// signed SHA-256 per chunk over http, CRC32C over https). The object is
// visible only once complete. Put does not keep data after it returns.
//
// An object the Store knows to be packed is not stored again; Put does not
// load the pack indexes to find out.
func (s *Store) Put(ctx context.Context, id hashing.ID, data []byte) error {
	return s.Packs.Put(ctx, id, data)
}

// put stores data as a loose object unless one of its size is there; it
// reports whether it stored it.
func (s *Store) put(ctx context.Context, id hashing.ID, data []byte) (added bool, err error) {
	key, size := s.key(id), int64(len(data))
	err = s.pol.Do(ctx, func(ctx context.Context) error {
		info, err := s.client.StatObject(ctx, s.bucket, key, minio.StatObjectOptions{})
		if err == nil && info.Size == size {
			added = false
			return nil
		}
		if err != nil && !isNotFound(err) {
			return err
		}
		_, err = s.client.PutObject(ctx, s.bucket, key, bytes.NewReader(data), size, minio.PutObjectOptions{
			ContentType: "application/octet-stream",
			PartSize:    uint64(s.opt.PartSize),
		})
		added = err == nil
		return err
	})
	if err != nil {
		return false, s.failed("put", id, err)
	}
	return added, nil
}

// Stat returns the size of object id: from the pack indexes if it is
// packed (Modified is then its pack's), else from its loose object. When
// it is neither, packs committed since the indexes were loaded are loaded
// (one listing) and looked at before Stat reports it missing.
func (s *Store) Stat(ctx context.Context, id hashing.ID) (store.Info, error) {
	return s.Packs.Stat(ctx, id)
}

// statLoose is Stat of the loose object.
func (s *Store) statLoose(ctx context.Context, id hashing.ID) (store.Info, error) {
	var info minio.ObjectInfo
	err := s.pol.Do(ctx, func(ctx context.Context) (err error) {
		info, err = s.client.StatObject(ctx, s.bucket, s.key(id), minio.StatObjectOptions{})
		return err
	})
	if err != nil {
		return store.Info{}, s.failed("stat", id, err)
	}
	return store.Info{ID: id, Size: info.Size, Modified: info.LastModified}, nil
}

// Delete removes object id, loose or packed; a missing object is not an
// error. It is DeleteMany of one object.
func (s *Store) Delete(ctx context.Context, id hashing.ID) error {
	return s.DeleteMany(ctx, []hashing.ID{id})
}

// Get returns a reader for length bytes of object id from off (length < 0:
// to the end). The reader holds one of the store's connection slots until
// it is closed or has reached the end, so close it promptly. If the
// connection fails while reading, the reader resumes where it stopped
// (with the usual retries); it returns io.ErrUnexpectedEOF rather than
// fewer bytes than the range holds.
//
// A packed object is read with a ranged GET of its pack. An object that is
// neither packed nor loose is looked for in packs committed since the
// indexes were loaded, as by Stat.
func (s *Store) Get(ctx context.Context, id hashing.ID, off, length int64) (io.ReadCloser, error) {
	return s.Packs.Get(ctx, id, off, length)
}

// getLoose is Get of the loose object.
func (s *Store) getLoose(ctx context.Context, id hashing.ID, off, length int64) (io.ReadCloser, error) {
	if length == 0 {
		// Nothing to read; the object must exist and off be within it.
		info, err := s.statLoose(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("get: %w", err)
		}
		if off > info.Size {
			return nil, s.failed("get", id, rangeError(off, length, info.Size))
		}
		return io.NopCloser(strings.NewReader("")), nil
	}
	r := &reader{s: s, ctx: ctx, id: id, key: s.key(id), off: off, end: -1}
	if length > 0 {
		r.end = off + length
	}
	if err := r.open(); err != nil {
		r.finish(err)
		return nil, err
	}
	return r, nil
}

// reader reads [off, end) of an object (end < 0: to the object's end,
// learnt from the first answer), reopening the range after a transient
// failure. It holds a connection slot from its first answer until it
// finishes.
type reader struct {
	s       *Store
	ctx     context.Context
	id      hashing.ID
	key     string // the loose object's, or its pack's
	off     int64  // next byte to read
	end     int64
	body    io.ReadCloser
	holding bool // has a connection slot
	fails   int  // reopenings without progress
	mu      sync.Mutex
	err     error // sticky error, or io.EOF
}

// open issues the GET for [off, end) with retries, taking a connection
// slot unless it holds one already.
func (r *reader) open() error {
	s := r.s
	key := r.key
	start := r.off
	mode := retry.KeepSlot
	if r.holding {
		mode = retry.NoSlot
	}
	var lastErr error
	err := s.pol.Attempts(r.ctx, mode, func(ctx context.Context) error {
		var opts minio.GetObjectOptions
		switch {
		case r.end > 0:
			_ = opts.SetRange(r.off, r.end-1)
		case r.off > 0:
			_ = opts.SetRange(r.off, 0)
		}
		body, _, h, err := minio.Core{Client: s.client}.GetObject(ctx, s.bucket, key, opts)
		if err != nil {
			lastErr = err
			return err
		}
		total, err := objectSize(h, opts.Header().Get("Range") != "")
		if err == nil && r.end > total {
			err = rangeError(start, r.end-start, total)
		}
		if err != nil {
			body.Close()
			lastErr = err
			return err
		}
		if r.end < 0 {
			r.end = total
		}
		r.body = body
		return nil
	})
	if err == nil {
		r.holding = true
		return nil
	}
	if !isBadRange(lastErr) {
		return s.failedAt("get", r.id, r.key, err)
	}
	// off is at or past the end (or the object is empty): which?
	var info minio.ObjectInfo
	err = s.pol.Attempts(r.ctx, mode, func(ctx context.Context) (err error) {
		info, err = s.client.StatObject(ctx, s.bucket, key, minio.StatObjectOptions{})
		return err
	})
	switch {
	case err != nil:
		return s.failedAt("get", r.id, r.key, err)
	case r.end < 0 && r.off == info.Size:
		r.end = r.off // at exactly the end: nothing to read
		return nil
	case r.end < 0:
		return s.failedAt("get", r.id, r.key, rangeError(r.off, -1, info.Size))
	default:
		return s.failedAt("get", r.id, r.key, rangeError(start, r.end-start, info.Size))
	}
}

// objectSize returns the object's full size from a GET answer's headers.
func objectSize(h http.Header, ranged bool) (int64, error) {
	if cr := h.Get("Content-Range"); cr != "" {
		// bytes first-last/total
		i := strings.LastIndexByte(cr, '/')
		if i >= 0 {
			if n, err := strconv.ParseInt(cr[i+1:], 10, 64); err == nil && n >= 0 {
				return n, nil
			}
		}
		return 0, fmt.Errorf("bad Content-Range %q in answer", cr)
	}
	if ranged {
		return 0, errors.New("ranged get answered without Content-Range")
	}
	n, err := strconv.ParseInt(h.Get("Content-Length"), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad Content-Length %q in answer", h.Get("Content-Length"))
	}
	return n, nil
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
		if rest := r.end - r.off; int64(len(p)) > rest {
			p = p[:rest]
		}
		n, err := r.body.Read(p)
		r.off += int64(n)
		if err == nil || n > 0 && err == io.EOF {
			return n, nil // EOF is reported by the next call, from off and end
		}
		r.body.Close()
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
	r.err = err
	if r.body != nil {
		r.body.Close()
		r.body = nil
	}
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

// List calls fn for every object under the prefix whose key has the
// <2 hex>/<64 hex> form, skipping other keys, then for every packed object
// (an object both loose and packed is reported once, as packed). It first
// reloads the pack indexes and fails, naming them, if any cannot be used.
// The listing is paged and, on transient failures, resumed after the last
// key seen, so every object is reported once.
func (s *Store) List(ctx context.Context, fn func(store.Info) error) error {
	return s.Packs.List(ctx, fn)
}

// listLoose is List of the loose objects.
func (s *Store) listLoose(ctx context.Context, fn func(store.Info) error) error {
	after := ""
	var fnErr error
	// No slot: fn may use the store while the listing is under way.
	err := s.pol.Attempts(ctx, retry.NoSlot, func(ctx context.Context) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		for obj := range s.client.ListObjectsIter(ctx, s.bucket, minio.ListObjectsOptions{
			Prefix: s.prefix, Recursive: true, StartAfter: after,
		}) {
			if obj.Err != nil {
				return obj.Err
			}
			after = obj.Key
			id, ok := s.parseKey(obj.Key)
			if !ok {
				continue
			}
			if err := fn(store.Info{ID: id, Size: obj.Size, Modified: obj.LastModified}); err != nil {
				fnErr = err
				return nil
			}
		}
		return nil
	})
	if fnErr != nil {
		return fnErr
	}
	if err != nil {
		return fmt.Errorf("list s3 store %s at %s: %w", s.url, s.endpoint, err)
	}
	return nil
}

// parseKey returns the ID of an object key, or false for other keys.
func (s *Store) parseKey(key string) (hashing.ID, bool) {
	rest, ok := strings.CutPrefix(key, s.prefix)
	if !ok || len(rest) != 2+1+64 || rest[2] != '/' || rest[:2] != rest[3:5] {
		return hashing.ID{}, false
	}
	id, err := hashing.ParseID(rest[3:])
	if err != nil || id.String() != rest[3:] {
		return hashing.ID{}, false
	}
	return id, true
}
