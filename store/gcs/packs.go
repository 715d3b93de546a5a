package gcs

import (
	"context"
	"fmt"
	"io"
	"time"

	"cloud.google.com/go/storage"
	"golang.org/x/sync/errgroup"
	"google.golang.org/api/iterator"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/internal/packstore"
)

// Batch starts a batch that packs objects of up to 4 MiB into pack objects
// of about 64 MiB, each uploaded (resumably, in ChunkSize chunks) with its
// index once full (see store/internal/packstore); larger objects are
// stored loose at once. See store.Batch for the contract.
func (s *Store) Batch(ctx context.Context) (store.Batch, error) { return s.packs.Batch(ctx) }

// DeleteMany removes objects, loose or packed; missing ones are not an
// error. A pack that keeps some objects is rewritten first (see
// packstore.Packs.DeleteMany). Calls are serialised within a Store; across
// processes the caller must hold the repository's lock.
func (s *Store) DeleteMany(ctx context.Context, ids []hashing.ID) error {
	return s.packs.DeleteMany(ctx, ids)
}

// Sweep removes pack objects left without an index older than cutoff.
// Resumable uploads never finished need no sweep: the service forgets
// them after a week.
func (s *Store) Sweep(ctx context.Context, cutoff time.Time, dryRun bool) (store.Debris, error) {
	return s.packs.Sweep(ctx, cutoff, dryRun)
}

// StatMany stats ids with up to Connections() requests at once; packed
// objects cost none (see packstore.Packs.StatMany).
func (s *Store) StatMany(ctx context.Context, ids []hashing.ID, fn func(id hashing.ID, info store.Info, err error) error) error {
	return s.packs.StatMany(ctx, ids, fn)
}

// HasMany reports which of ids the store holds (see StatMany). Any
// failure other than a missing object fails the whole call.
func (s *Store) HasMany(ctx context.Context, ids []hashing.ID) (map[hashing.ID]bool, error) {
	return s.packs.HasMany(ctx, ids)
}

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
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(b.s.opt.Connections)
	for _, k := range keys {
		g.Go(func() error {
			if err := b.s.pol.Acquire(gctx); err != nil {
				return err
			}
			defer b.s.pol.Release()
			err := b.s.bkt.Object(k).Delete(gctx)
			if err != nil && !isNotFound(err) {
				return fmt.Errorf("delete gs://%s/%s at %s: %w", b.s.bucket, k, b.s.endpoint, b.s.pol.GiveUp(err))
			}
			return nil
		})
	}
	return g.Wait()
}

func (b backend) IsNotFound(err error) bool { return isNotFound(err) }

// loose is the Store's one-object-per-chunk operations, for packstore.
type loose struct{ s *Store }

func (l loose) PutLoose(ctx context.Context, id hashing.ID, data []byte) (bool, error) {
	return l.s.putLoose(ctx, id, data)
}

func (l loose) StatLoose(ctx context.Context, id hashing.ID) (store.Info, error) {
	return l.s.statLoose(ctx, id)
}

func (l loose) GetLoose(ctx context.Context, id hashing.ID, off, length int64) (io.ReadCloser, error) {
	return l.s.getLoose(ctx, id, off, length)
}

func (l loose) ListLoose(ctx context.Context, fn func(store.Info) error) error {
	return l.s.listLoose(ctx, fn)
}

func (l loose) LooseKey(id hashing.ID) string { return l.s.key(id) }
