package azure

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/chunkvc/chunkvc/store"
)

// namedDir is the blob name segment under the prefix that holds named
// objects (store.Registry).
const namedDir = "named/"

func (s *Store) namedKey(name string) string { return s.prefix + namedDir + name }

// PutNamed stores data under name with one Put Blob, which the service
// makes visible whole.
func (s *Store) PutNamed(ctx context.Context, name string, data []byte) error {
	if err := store.CheckName(name, false); err != nil {
		return err
	}
	if len(data) > store.MaxNamed {
		return fmt.Errorf("put %s in %s: %d bytes is more than %d", name, s.url, len(data), store.MaxNamed)
	}
	if err := s.upload(ctx, s.namedKey(name), bytes.NewReader(data), int64(len(data))); err != nil {
		return fmt.Errorf("put %s/%s (at %s): %w", s.container, s.namedKey(name), s.endpoint, explain(err))
	}
	return nil
}

// GetNamed reads named object name.
func (s *Store) GetNamed(ctx context.Context, name string) ([]byte, error) {
	if err := store.CheckName(name, false); err != nil {
		return nil, err
	}
	key := s.namedKey(name)
	b, err := s.getAll(ctx, key, store.MaxNamed)
	if isNotFound(err) {
		return nil, fmt.Errorf("get %s/%s: %w", s.container, key, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get %s/%s (at %s): %w", s.container, key, s.endpoint, explain(err))
	}
	return b, nil
}

// ListNamed lists the named objects under prefix, in name order.
func (s *Store) ListNamed(ctx context.Context, prefix string, fn func(name string) error) error {
	if err := store.CheckName(prefix, true); err != nil {
		return err
	}
	base := s.prefix + namedDir
	err := s.listPrefix(ctx, base+prefix, func(b *container.BlobItem) error {
		name := strings.TrimPrefix(deref(b.Name), base)
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
	if err := s.deleteKey(ctx, s.namedKey(name)); err != nil {
		return fmt.Errorf("delete %s/%s (at %s): %w", s.container, s.namedKey(name), s.endpoint, explain(err))
	}
	return nil
}
