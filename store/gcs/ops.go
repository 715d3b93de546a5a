package gcs

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"cloud.google.com/go/storage"
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
// after it returns. An object the Store knows to be packed is not stored
// again.
func (s *Store) Put(ctx context.Context, id hashing.ID, data []byte) error {
	return s.Packs.Put(ctx, id, data)
}

// putLoose is Put of a loose object; it reports whether it stored it.
func (s *Store) putLoose(ctx context.Context, id hashing.ID, data []byte) (bool, error) {
	if err := s.pol.Acquire(ctx); err != nil {
		return false, s.failed("put", id, err)
	}
	defer s.pol.Release()
	key := s.key(id)
	attrs, err := s.bkt.Object(key).Attrs(ctx)
	switch {
	case err == nil && attrs.Size == int64(len(data)):
		return false, nil
	case err != nil && !isNotFound(err):
		return false, s.failed("put", id, err)
	}
	cond := storage.Conditions{DoesNotExist: true}
	if err == nil {
		cond = storage.Conditions{GenerationMatch: attrs.Generation}
	}
	if err := s.write(ctx, key, cond, bytes.NewReader(data), int64(len(data))); err != nil {
		return false, s.failed("put", id, err)
	}
	return true, nil
}

// write uploads data to key under cond: one request up to ChunkSize, a
// resumable upload in ChunkSize chunks above it. A write whose
// precondition fails because the object exists now (put concurrently, or
// by an attempt whose answer was lost) has nothing left to do. What the
// server says it stored is checked against data (size and CRC32C): a
// server that took a resent chunk twice (fake-gcs-server does, when the
// answer to a chunk was lost) has its object deleted and written again.
func (s *Store) write(ctx context.Context, key string, cond storage.Conditions, data io.ReaderAt, size int64) error {
	want, err := crc32cOf(data, size)
	if err != nil {
		return err
	}
	for attempt := 1; ; attempt++ {
		attrs, err := s.writeOnce(ctx, key, cond, data, size, want)
		if err != nil || attrs == nil || attrs.Size == size && attrs.CRC32C == want {
			return err
		}
		bad := fmt.Errorf("%w: server stored %d bytes with crc32c %08x, sent %d bytes with %08x",
			store.ErrCorrupt, attrs.Size, attrs.CRC32C, size, want)
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
func (s *Store) writeOnce(ctx context.Context, key string, cond storage.Conditions, data io.ReaderAt, size int64, crc uint32) (*storage.ObjectAttrs, error) {
	ctx, cancel := context.WithCancel(withWriteBudget(ctx, s.opt.Retries))
	defer cancel() // a Writer not closed is aborted by its context
	obj := s.bkt.Object(key)
	if cond != (storage.Conditions{}) {
		obj = obj.If(cond)
	}
	w := obj.NewWriter(ctx)
	// A chunk as large as the object, not more: the Writer buffers a chunk.
	w.ChunkSize = int(min(int64(s.opt.ChunkSize), int64(roundChunk(int(size)))))
	w.ChunkRetryDeadline = s.opt.RetryTime
	w.ContentType = "application/octet-stream"
	w.SendCRC32C = true
	w.CRC32C = crc
	if _, err := io.Copy(w, io.NewSectionReader(data, 0, size)); err != nil {
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

// Stat returns the size and age of object id: from the pack indexes if it
// is packed (Modified is then its pack's), else from its loose object.
func (s *Store) Stat(ctx context.Context, id hashing.ID) (store.Info, error) {
	return s.Packs.Stat(ctx, id)
}

// statLoose is Stat of the loose object.
func (s *Store) statLoose(ctx context.Context, id hashing.ID) (store.Info, error) {
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

// Delete removes object id, loose or packed; a missing object is not an
// error. It is DeleteMany of one object.
func (s *Store) Delete(ctx context.Context, id hashing.ID) error {
	return s.DeleteMany(ctx, []hashing.ID{id})
}

// List calls fn for every object under the prefix whose key has the
// <2 hex>/<64 hex> form, skipping other keys, then for every packed object
// (one both loose and packed is reported once). The listing is paged; the
// SDK retries a failed page, so every object is reported once. It fails,
// naming them, while a pack index cannot be used.
func (s *Store) List(ctx context.Context, fn func(store.Info) error) error {
	return s.Packs.List(ctx, fn)
}

// listLoose is List of the loose objects.
func (s *Store) listLoose(ctx context.Context, fn func(store.Info) error) error {
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
