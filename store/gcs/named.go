package gcs

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"strings"

	"cloud.google.com/go/storage"
	"google.golang.org/api/iterator"

	"github.com/chunkvc/chunkvc/store"
)

// namedDir is the key segment under the prefix that holds named objects
// (store.Registry).
const namedDir = "named/"

var _ store.Registry = (*Store)(nil)

func (s *Store) namedKey(name string) string { return s.prefix + namedDir + name }

// crc32cOf returns the CRC32C of size bytes of r.
func crc32cOf(r io.ReaderAt, size int64) (uint32, error) {
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	if _, err := io.Copy(h, io.NewSectionReader(r, 0, size)); err != nil {
		return 0, err
	}
	return h.Sum32(), nil
}

// PutNamed stores data under name with one upload, which GCS makes
// visible whole.
func (s *Store) PutNamed(ctx context.Context, name string, data []byte) error {
	if err := store.CheckName(name, false); err != nil {
		return err
	}
	if len(data) > store.MaxNamed {
		return fmt.Errorf("put %s in %s: %d bytes is more than %d", name, s.url, len(data), store.MaxNamed)
	}
	if err := s.pol.Acquire(ctx); err != nil {
		return err
	}
	defer s.pol.Release()
	// No precondition: a replace that is retried writes the same bytes.
	if err := s.write(ctx, s.namedKey(name), storage.Conditions{}, bytes.NewReader(data), int64(len(data))); err != nil {
		return fmt.Errorf("put gs://%s/%s (at %s): %w", s.bucket, s.namedKey(name), s.endpoint, s.pol.GiveUp(err))
	}
	return nil
}

// GetNamed reads named object name.
func (s *Store) GetNamed(ctx context.Context, name string) ([]byte, error) {
	if err := store.CheckName(name, false); err != nil {
		return nil, err
	}
	if err := s.pol.Acquire(ctx); err != nil {
		return nil, err
	}
	defer s.pol.Release()
	key := s.namedKey(name)
	r, err := s.bkt.Object(key).NewReader(ctx)
	if isNotFound(err) {
		return nil, fmt.Errorf("get gs://%s/%s: %w", s.bucket, key, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get gs://%s/%s (at %s): %w", s.bucket, key, s.endpoint, s.pol.GiveUp(err))
	}
	defer func() { _ = r.Close() }()
	b, err := io.ReadAll(io.LimitReader(r, store.MaxNamed+1))
	if err == nil && len(b) > store.MaxNamed {
		err = fmt.Errorf("larger than %d bytes", store.MaxNamed)
	}
	if err != nil {
		return nil, fmt.Errorf("get gs://%s/%s (at %s): %w", s.bucket, key, s.endpoint, s.pol.GiveUp(err))
	}
	return b, nil
}

// ListNamed lists the named objects under prefix, in key order (GCS lists
// in lexical order).
func (s *Store) ListNamed(ctx context.Context, prefix string, fn func(name string) error) error {
	if err := store.CheckName(prefix, true); err != nil {
		return err
	}
	base := s.prefix + namedDir
	q := &storage.Query{Prefix: base + prefix}
	if err := q.SetAttrSelection([]string{"Name"}); err != nil {
		return fmt.Errorf("list %s in %s: %w", prefix, s.url, err)
	}
	it := s.bkt.Objects(ctx, q)
	for {
		attrs, err := it.Next()
		if err == iterator.Done {
			return nil
		}
		if err != nil {
			return fmt.Errorf("list %s in %s at %s: %w", prefix, s.url, s.endpoint, s.pol.GiveUp(err))
		}
		name := strings.TrimPrefix(attrs.Name, base)
		if store.CheckName(name, false) != nil {
			continue
		}
		if err := fn(name); err != nil {
			return err
		}
	}
}

// DeleteNamed removes named object name.
func (s *Store) DeleteNamed(ctx context.Context, name string) error {
	if err := store.CheckName(name, false); err != nil {
		return err
	}
	if err := s.pol.Acquire(ctx); err != nil {
		return err
	}
	defer s.pol.Release()
	key := s.namedKey(name)
	if err := s.bkt.Object(key).Delete(ctx); err != nil && !isNotFound(err) {
		return fmt.Errorf("delete gs://%s/%s (at %s): %w", s.bucket, key, s.endpoint, s.pol.GiveUp(err))
	}
	return nil
}
