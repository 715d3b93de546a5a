package s3

import (
	"context"
	"fmt"
	"strings"

	"github.com/minio/minio-go/v7"

	"github.com/chunkvc/chunkvc/store"
)

// namedDir is the key segment under the prefix that holds named objects
// (store.Registry).
const namedDir = "named/"

var _ store.Registry = (*Store)(nil)

func (s *Store) namedKey(name string) string { return s.prefix + namedDir + name }

// PutNamed stores data under name with one PUT, which S3 makes visible
// whole.
func (s *Store) PutNamed(ctx context.Context, name string, data []byte) error {
	if err := store.CheckName(name, false); err != nil {
		return err
	}
	if len(data) > store.MaxNamed {
		return fmt.Errorf("put %s in %s: %d bytes is more than %d", name, s.url, len(data), store.MaxNamed)
	}
	return s.putBytes(ctx, s.namedKey(name), data)
}

// GetNamed reads named object name.
func (s *Store) GetNamed(ctx context.Context, name string) ([]byte, error) {
	if err := store.CheckName(name, false); err != nil {
		return nil, err
	}
	key := s.namedKey(name)
	b, err := s.getAll(ctx, key, store.MaxNamed)
	if isNotFound(err) {
		return nil, fmt.Errorf("get %s/%s: %w", s.bucket, key, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get %s/%s (at %s): %w", s.bucket, key, s.endpoint, err)
	}
	return b, nil
}

// ListNamed lists the named objects under prefix, in key order.
func (s *Store) ListNamed(ctx context.Context, prefix string, fn func(name string) error) error {
	if err := store.CheckName(prefix, true); err != nil {
		return err
	}
	base := s.prefix + namedDir
	err := s.listKeys(ctx, base+prefix, func(obj minio.ObjectInfo) error {
		name := strings.TrimPrefix(obj.Key, base)
		if store.CheckName(name, false) != nil {
			return nil
		}
		return fn(name)
	})
	if err != nil {
		return fmt.Errorf("list %s in %s: %w", prefix, s.url, err)
	}
	return nil
}

// DeleteNamed removes named object name.
func (s *Store) DeleteNamed(ctx context.Context, name string) error {
	if err := store.CheckName(name, false); err != nil {
		return err
	}
	return s.removeKeys(ctx, []string{s.namedKey(name)})
}
