package gcs

import (
	"context"
	"fmt"
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
	if err := s.pol.Acquire(ctx); err != nil {
		return s.failed("put", id, err)
	}
	defer s.pol.Release()
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
// by an attempt whose answer was lost) has nothing left to do. What the
// server says it stored is checked against data (size and CRC32C): a
// server that took a resent chunk twice (fake-gcs-server does, when the
// answer to a chunk was lost) has its object deleted and written again.
func (s *Store) write(ctx context.Context, key string, cond storage.Conditions, data []byte) error {
	want := crc32c(data)
	for attempt := 1; ; attempt++ {
		attrs, err := s.writeOnce(ctx, key, cond, data, want)
		if err != nil || attrs == nil || attrs.Size == int64(len(data)) && attrs.CRC32C == want {
			return err
		}
		bad := fmt.Errorf("%w: server stored %d bytes with crc32c %08x, sent %d bytes with %08x",
			store.ErrCorrupt, attrs.Size, attrs.CRC32C, len(data), want)
		derr := s.bkt.Object(key).If(storage.Conditions{GenerationMatch: attrs.Generation}).Delete(ctx)
		if derr != nil && !isNotFound(derr) && code(derr) != http.StatusPreconditionFailed {
			return fmt.Errorf("%w; deleting it: %w", bad, derr)
		}
		if attempt >= s.opt.Retries {
			return bad
		}
		if cond.GenerationMatch != 0 {
			cond = storage.Conditions{DoesNotExist: true}
		}
	}
}

// writeOnce is one upload of write; it returns the stored object's
// attributes, nil when a DoesNotExist precondition failed.
func (s *Store) writeOnce(ctx context.Context, key string, cond storage.Conditions, data []byte, crc uint32) (*storage.ObjectAttrs, error) {
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
	w.CRC32C = crc
	if _, err := w.Write(data); err != nil {
		_ = w.Close()
		return nil, err
	}
	err := w.Close()
	if code(err) == http.StatusPreconditionFailed && cond.DoesNotExist {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return w.Attrs(), nil
}

// Stat returns the size and age of object id.
func (s *Store) Stat(ctx context.Context, id hashing.ID) (store.Info, error) {
	if err := s.pol.Acquire(ctx); err != nil {
		return store.Info{}, s.failed("stat", id, err)
	}
	defer s.pol.Release()
	attrs, err := s.bkt.Object(s.key(id)).Attrs(ctx)
	if err != nil {
		return store.Info{}, s.failed("stat", id, err)
	}
	return store.Info{ID: id, Size: attrs.Size, Modified: attrs.Updated}, nil
}

// Delete removes object id; a missing object is not an error.
func (s *Store) Delete(ctx context.Context, id hashing.ID) error {
	if err := s.pol.Acquire(ctx); err != nil {
		return s.failed("delete", id, err)
	}
	defer s.pol.Release()
	err := s.bkt.Object(s.key(id)).Delete(ctx)
	if err != nil && !isNotFound(err) {
		return s.failed("delete", id, err)
	}
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
			return fmt.Errorf("list gcs store %s at %s: %w", s.url, s.endpoint, s.pol.GiveUp(err))
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
