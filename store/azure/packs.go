package azure

import (
	"context"
	"io"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store/internal/packstore"
)

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

// Delete removes blobs: in blob batches where the service takes them.
func (b backend) Delete(ctx context.Context, keys []string) error { return b.s.deleteBlobs(ctx, keys) }

func (b backend) IsNotFound(err error) bool { return isNotFound(err) }
