package gcs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"cloud.google.com/go/storage"
	"golang.org/x/sync/errgroup"
	"google.golang.org/api/iterator"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
)

// rangeError is the error for a range outside an object of the given size.
func rangeError(off, length, size int64) error {
	return fmt.Errorf("range at %d length %d is outside the %d-byte object", off, length, size)
}

// Put stores data under id. An object already there with the same size is
// kept as it is (nothing is sent); one of another size is replaced. The
// object becomes visible only once complete, and Put does not keep data
// after it returns.
func (s *Store) Put(ctx context.Context, id hashing.ID, data []byte) error {
	if err := s.acquire(ctx); err != nil {
		return s.failed("put", id, err)
	}
	defer s.release()
	key := s.key(id)
	attrs, err := s.bkt.Object(key).Attrs(ctx)
	switch {
	case err == nil && attrs.Size == int64(len(data)):
		return nil
	case err != nil && !isNotFound(err):
		return s.failed("put", id, err)
	}
	cond := storage.Conditions{DoesNotExist: true}
	if err == nil {
		cond = storage.Conditions{GenerationMatch: attrs.Generation}
	}
	if err := s.write(ctx, key, cond, data); err != nil {
		return s.failed("put", id, err)
	}
	return nil
}

// write uploads data to key under cond: one request up to ChunkSize, a
// resumable upload in ChunkSize chunks above it. A write whose
// precondition fails because the object exists now (put concurrently, or
// by an attempt whose answer was lost) has nothing left to do.
func (s *Store) write(ctx context.Context, key string, cond storage.Conditions, data []byte) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // a Writer not closed is aborted by its context
	obj := s.bkt.Object(key)
	if cond != (storage.Conditions{}) {
		obj = obj.If(cond)
	}
	w := obj.NewWriter(ctx)
	// A chunk as large as the object, not more: the Writer buffers a chunk.
	w.ChunkSize = min(s.opt.ChunkSize, roundChunk(len(data)))
	w.ChunkRetryDeadline = s.opt.RetryTime
	w.ContentType = "application/octet-stream"
	w.SendCRC32C = true
	w.CRC32C = crc32c(data)
	if _, err := w.Write(data); err != nil {
		_ = w.Close()
		return err
	}
	err := w.Close()
	if code(err) == http.StatusPreconditionFailed && cond.DoesNotExist {
		return nil
	}
	return err
}

// Stat returns the size and age of object id.
func (s *Store) Stat(ctx context.Context, id hashing.ID) (store.Info, error) {
	if err := s.acquire(ctx); err != nil {
		return store.Info{}, s.failed("stat", id, err)
	}
	defer s.release()
	attrs, err := s.bkt.Object(s.key(id)).Attrs(ctx)
	if err != nil {
		return store.Info{}, s.failed("stat", id, err)
	}
	return store.Info{ID: id, Size: attrs.Size, Modified: attrs.Updated}, nil
}

// Delete removes object id; a missing object is not an error.
func (s *Store) Delete(ctx context.Context, id hashing.ID) error {
	if err := s.acquire(ctx); err != nil {
		return s.failed("delete", id, err)
	}
	defer s.release()
	err := s.bkt.Object(s.key(id)).Delete(ctx)
	if err != nil && !isNotFound(err) {
		return s.failed("delete", id, err)
	}
	return nil
}

// Get returns a reader for length bytes of object id from off (length < 0:
// to the end), read with one ranged GET. The reader holds one of the
// store's connection slots until it is closed or has reached the end, so
// close it promptly. A connection that fails while reading is reopened
// where it stopped (with the usual retries); the reader returns an error
// rather than fewer bytes than the range holds.
func (s *Store) Get(ctx context.Context, id hashing.ID, off, length int64) (io.ReadCloser, error) {
	if off < 0 {
		return nil, s.failed("get", id, fmt.Errorf("negative offset %d", off))
	}
	if err := s.acquire(ctx); err != nil {
		return nil, s.failed("get", id, err)
	}
	obj := s.bkt.Object(s.key(id))
	if length == 0 {
		// Nothing to read; the object must exist and off be within it.
		return s.emptyRange(ctx, id, obj, off, length)
	}
	r, err := obj.NewRangeReader(ctx, off, length)
	if code(err) == http.StatusRequestedRangeNotSatisfiable {
		return s.emptyRange(ctx, id, obj, off, length)
	}
	if err != nil {
		s.release()
		return nil, s.failed("get", id, err)
	}
	size := r.Attrs.Size
	if length > 0 && off+length > size || off > size {
		_ = r.Close()
		s.release()
		return nil, s.failed("get", id, rangeError(off, length, size))
	}
	want := size - off
	if length > 0 {
		want = length
	}
	return &reader{s: s, id: id, r: r, left: want}, nil
}

// emptyRange answers a Get that the server found outside the object, or
// that asks for nothing: an empty reader when off is at most the object's
// size (a length < 0 to the end, or 0), else a range error. It releases
// the caller's connection slot.
func (s *Store) emptyRange(ctx context.Context, id hashing.ID, obj *storage.ObjectHandle, off, length int64) (io.ReadCloser, error) {
	defer s.release()
	attrs, err := obj.Attrs(ctx)
	switch {
	case err != nil:
		return nil, s.failed("get", id, err)
	case off > attrs.Size || length > 0:
		return nil, s.failed("get", id, rangeError(off, length, attrs.Size))
	}
	return io.NopCloser(strings.NewReader("")), nil
}

// reader is a ranged read that frees its connection slot once, at the
// end of the range or at Close, and refuses to end short.
type reader struct {
	s    *Store
	id   hashing.ID
	r    *storage.Reader
	left int64 // bytes of the range not yet read

	mu   sync.Mutex
	done bool
}

func (r *reader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return 0, errors.New("read after close")
	}
	n, err := r.r.Read(p)
	r.left -= int64(n)
	switch {
	case err == io.EOF && r.left > 0:
		err = r.s.failed("get", r.id, fmt.Errorf("%w: answer ended %d bytes short", io.ErrUnexpectedEOF, r.left))
	case err != nil && err != io.EOF:
		err = r.s.failed("get", r.id, err)
	}
	if err != nil {
		r.finish()
	}
	return n, err
}

func (r *reader) finish() {
	if !r.done {
		r.done = true
		_ = r.r.Close()
		r.s.release()
	}
}

func (r *reader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.finish()
	return nil
}

// List calls fn for every object under the prefix whose key has the
// <2 hex>/<64 hex> form, skipping other keys. The listing is paged; the
// SDK retries a failed page, so every object is reported once.
func (s *Store) List(ctx context.Context, fn func(store.Info) error) error {
	q := &storage.Query{Prefix: s.prefix}
	if err := q.SetAttrSelection([]string{"Name", "Size", "Updated"}); err != nil {
		return fmt.Errorf("list gcs store %s: %w", s.url, err)
	}
	it := s.bkt.Objects(ctx, q)
	for {
		attrs, err := it.Next()
		if err == iterator.Done {
			return nil
		}
		if err != nil {
			return fmt.Errorf("list gcs store %s at %s: %w", s.url, s.endpoint, s.classify(err))
		}
		id, ok := s.parseKey(attrs.Name)
		if !ok {
			continue
		}
		if err := fn(store.Info{ID: id, Size: attrs.Size, Modified: attrs.Updated}); err != nil {
			return err
		}
	}
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

// HasMany reports which of ids the store holds, with one metadata request
// per distinct id, Connections() at a time. Any failure other than a
// missing object fails the call.
func (s *Store) HasMany(ctx context.Context, ids []hashing.ID) (map[hashing.ID]bool, error) {
	out := make(map[hashing.ID]bool, len(ids))
	distinct := make([]hashing.ID, 0, len(ids))
	for _, id := range ids {
		if _, dup := out[id]; !dup {
			out[id] = false
			distinct = append(distinct, id)
		}
	}
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.opt.Connections)
	for _, id := range distinct {
		g.Go(func() error {
			ok, err := store.Has(gctx, s, id)
			if ok {
				mu.Lock()
				out[id] = true
				mu.Unlock()
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
