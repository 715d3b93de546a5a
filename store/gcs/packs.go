package gcs

import (
	"context"
	"fmt"
	"io"

	"cloud.google.com/go/storage"
	"google.golang.org/api/iterator"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store/internal/packstore"
)

// backend is the Store's object operations, for packstore. The SDK
// retries each request; a connection slot is held while it runs.
type backend struct{ s *Store }

func (b backend) Upload(ctx context.Context, key string, r io.ReaderAt, size int64) error {
	if err := b.s.pol.Acquire(ctx); err != nil {
		return err
	}
	defer b.s.pol.Release()
	// No precondition: a replace that is retried writes the same bytes.
	if err := b.s.write(ctx, key, storage.Conditions{}, r, size); err != nil {
		return fmt.Errorf("put gs://%s/%s (at %s): %w", b.s.bucket, key, b.s.endpoint, b.s.pol.GiveUp(err))
	}
	return nil
}

func (b backend) ReadAll(ctx context.Context, key string, limit int64) ([]byte, error) {
	if err := b.s.pol.Acquire(ctx); err != nil {
		return nil, err
	}
	defer b.s.pol.Release()
	r, err := b.s.bkt.Object(key).NewReader(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }()
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err == nil && int64(len(data)) > limit {
		err = fmt.Errorf("larger than %d bytes", limit)
	}
	if err != nil {
		return nil, fmt.Errorf("get gs://%s/%s (at %s): %w", b.s.bucket, key, b.s.endpoint, b.s.pol.GiveUp(err))
	}
	return data, nil
}

func (b backend) OpenRange(ctx context.Context, id hashing.ID, key string, off, end int64) (io.ReadCloser, error) {
	return b.s.openRange(ctx, id, key, off, end, end-off)
}

func (b backend) List(ctx context.Context, prefix string, fn func(packstore.Object) error) error {
	q := &storage.Query{Prefix: prefix}
	if err := q.SetAttrSelection([]string{"Name", "Size", "Updated"}); err != nil {
		return err
	}
	it := b.s.bkt.Objects(ctx, q)
	for {
		attrs, err := it.Next()
		if err == iterator.Done {
			return nil
		}
		if err != nil {
			return fmt.Errorf("list gs://%s/%s at %s: %w", b.s.bucket, prefix, b.s.endpoint, b.s.pol.GiveUp(err))
		}
		if err := fn(packstore.Object{Key: attrs.Name, Size: attrs.Size, Mod: attrs.Updated}); err != nil {
			return err
		}
	}
}

func (b backend) Stat(ctx context.Context, key string) (packstore.Object, error) {
	if err := b.s.pol.Acquire(ctx); err != nil {
		return packstore.Object{}, err
	}
	defer b.s.pol.Release()
	attrs, err := b.s.bkt.Object(key).Attrs(ctx)
	if err != nil {
		return packstore.Object{}, err
	}
	return packstore.Object{Key: key, Size: attrs.Size, Mod: attrs.Updated}, nil
}

// Delete removes objects, up to Connections() at once.
func (b backend) Delete(ctx context.Context, keys []string) error {
	return packstore.DeleteEach(ctx, keys, b.s.opt.Connections, func(ctx context.Context, k string) error {
		if err := b.s.pol.Acquire(ctx); err != nil {
			return err
		}
		defer b.s.pol.Release()
		err := b.s.bkt.Object(k).Delete(ctx)
		if err != nil && !isNotFound(err) {
			return fmt.Errorf("delete gs://%s/%s at %s: %w", b.s.bucket, k, b.s.endpoint, b.s.pol.GiveUp(err))
		}
		return nil
	})
}

func (b backend) IsNotFound(err error) bool { return isNotFound(err) }
