package azure

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"golang.org/x/sync/errgroup"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/internal/packstore"
)

// Batch starts a batch that packs objects of up to 4 MiB into pack blobs
// of about 64 MiB, each uploaded in staged blocks with its index once full
// (see store/internal/packstore); larger objects are stored loose at once.
// See store.Batch for the contract.
func (s *Store) Batch(ctx context.Context) (store.Batch, error) { return s.packs.Batch(ctx) }

// DeleteMany removes objects, loose or packed; missing ones are not an
// error. A pack that keeps some objects is rewritten first (see
// packstore.Packs.DeleteMany). Calls are serialised within a Store; across
// processes the caller must hold the repository's lock.
func (s *Store) DeleteMany(ctx context.Context, ids []hashing.ID) error {
	return s.packs.DeleteMany(ctx, ids)
}

// Sweep removes pack blobs left without an index older than cutoff.
// Blocks staged but never committed need no sweep: the service discards
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

// backend is the Store's blob operations, for packstore.
type backend struct{ s *Store }

func (b backend) Upload(ctx context.Context, key string, r io.ReaderAt, size int64) error {
	return b.s.upload(ctx, key, r, size)
}

func (b backend) ReadAll(ctx context.Context, key string, limit int64) ([]byte, error) {
	return b.s.getAll(ctx, key, limit)
}

func (b backend) OpenRange(ctx context.Context, id hashing.ID, key string, off, end int64) (io.ReadCloser, error) {
	return b.s.openRange(ctx, id, key, off, end)
}

func (b backend) List(ctx context.Context, prefix string, fn func(packstore.Object) error) error {
	return b.s.listPrefix(ctx, prefix, func(bi *container.BlobItem) error {
		obj := packstore.Object{Key: deref(bi.Name)}
		if bi.Properties != nil {
			obj.Size = deref(bi.Properties.ContentLength)
			if bi.Properties.LastModified != nil {
				obj.Mod = modified(*bi.Properties.LastModified)
			}
		}
		return fn(obj)
	})
}

func (b backend) Stat(ctx context.Context, key string) (packstore.Object, error) {
	info, err := b.s.statKey(ctx, key)
	return packstore.Object{Key: key, Size: info.Size, Mod: info.Modified}, err
}

// Delete removes blobs, up to Connections() at once.
func (b backend) Delete(ctx context.Context, keys []string) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(b.s.opt.Connections)
	for _, k := range keys {
		g.Go(func() error {
			if err := b.s.deleteKey(gctx, k); err != nil {
				return fmt.Errorf("delete blob %s/%s at %s: %w", b.s.container, k, b.s.endpoint, explain(err))
			}
			return nil
		})
	}
	return g.Wait()
}

func (b backend) IsNotFound(err error) bool { return isNotFound(err) }

// loose is the Store's one-blob-per-object operations, for packstore.
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
