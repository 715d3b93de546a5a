package s3

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/internal/packstore"
	"github.com/chunkvc/chunkvc/store/internal/retry"
)

// packDir is the key segment under the prefix that holds packs and their
// indexes (see store/internal/packstore).
const packDir = "packs/"

// packMax is the size at which a batch starts a new pack; a variable so
// that tests can shrink it.
var packMax int64 = packstore.DefaultPackMax

// packKey returns the key of pack name's object with extension ext.
func (s *Store) packKey(name, ext string) string {
	return s.prefix + packDir + name + ext
}

// newPacks returns the pack layer of s.
func (s *Store) newPacks() *packstore.Packs {
	return packstore.New(packstore.Config{
		Backend: backend{s}, Loose: packstore.Loose{Put: s.put, Stat: s.statLoose, Get: s.getLoose, List: s.listLoose, Key: s.key}, Prefix: s.prefix,
		Name: "s3 store " + s.url + " at " + s.endpoint, Connections: s.opt.Connections, RetryTime: s.opt.RetryTime,
		PackMax: func() int64 { return packMax },
	})
}

var (
	_ store.Batcher     = (*Store)(nil)
	_ store.BulkRemover = (*Store)(nil)
	_ store.Sweeper     = (*Store)(nil)
)

// backend is the Store's object operations, for packstore.
type backend struct{ s *Store }

// Upload is one PUT, not a multipart upload: a process killed midway then
// leaves no parts on the server (a pack is at most 64 MiB plus an object,
// far below S3's 5 GB for a PUT).
func (b backend) Upload(ctx context.Context, key string, r io.ReaderAt, size int64) error {
	s := b.s
	err := s.pol.Do(ctx, func(ctx context.Context) error {
		_, err := s.client.PutObject(ctx, s.bucket, key, io.NewSectionReader(r, 0, size), size, minio.PutObjectOptions{
			ContentType:      "application/octet-stream",
			DisableMultipart: true,
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("put %s/%s (at %s): %w", s.bucket, key, s.endpoint, err)
	}
	return nil
}

func (b backend) ReadAll(ctx context.Context, key string, limit int64) ([]byte, error) {
	return b.s.getAll(ctx, key, limit)
}

func (b backend) OpenRange(ctx context.Context, id hashing.ID, key string, off, end int64) (io.ReadCloser, error) {
	rd := &reader{s: b.s, ctx: ctx, id: id, key: key, off: off, end: end}
	if err := rd.open(); err != nil {
		rd.finish(err)
		return nil, err
	}
	return rd, nil
}

func (b backend) List(ctx context.Context, prefix string, fn func(packstore.Object) error) error {
	return b.s.listKeys(ctx, prefix, func(obj minio.ObjectInfo) error {
		return fn(packstore.Object{Key: obj.Key, Size: obj.Size, Mod: obj.LastModified})
	})
}

func (b backend) Stat(ctx context.Context, key string) (packstore.Object, error) {
	var info minio.ObjectInfo
	err := b.s.pol.Do(ctx, func(ctx context.Context) (err error) {
		info, err = b.s.client.StatObject(ctx, b.s.bucket, key, minio.StatObjectOptions{})
		return err
	})
	return packstore.Object{Key: key, Size: info.Size, Mod: info.LastModified}, err
}

func (b backend) Delete(ctx context.Context, keys []string) error { return b.s.removeKeys(ctx, keys) }

func (b backend) IsNotFound(err error) bool { return isNotFound(err) }

// getAll reads a whole object of at most limit bytes, with retries.
func (s *Store) getAll(ctx context.Context, key string, limit int64) ([]byte, error) {
	var b []byte
	err := s.pol.Do(ctx, func(ctx context.Context) error {
		obj, _, _, err := minio.Core{Client: s.client}.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
		if err != nil {
			return err
		}
		defer obj.Close()
		var buf bytes.Buffer
		n, err := buf.ReadFrom(io.LimitReader(obj, limit+1))
		if err != nil {
			return err
		}
		if n > limit {
			return fmt.Errorf("larger than %d bytes", limit)
		}
		b = buf.Bytes()
		return nil
	})
	return b, err
}

// listKeys calls fn for every key under prefix, resuming after the last
// key seen on transient failures.
func (s *Store) listKeys(ctx context.Context, prefix string, fn func(minio.ObjectInfo) error) error {
	after := ""
	var fnErr error
	err := s.pol.Attempts(ctx, retry.NoSlot, func(ctx context.Context) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		for obj := range s.client.ListObjectsIter(ctx, s.bucket, minio.ListObjectsOptions{
			Prefix: prefix, Recursive: true, StartAfter: after,
		}) {
			if obj.Err != nil {
				return obj.Err
			}
			after = obj.Key
			if err := fn(obj); err != nil {
				fnErr = err
				return nil
			}
		}
		return nil
	})
	if fnErr != nil {
		return fnErr
	}
	return err
}

// putBytes stores a small object under key.
func (s *Store) putBytes(ctx context.Context, key string, b []byte) error {
	err := s.pol.Do(ctx, func(ctx context.Context) error {
		_, err := s.client.PutObject(ctx, s.bucket, key, bytes.NewReader(b), int64(len(b)), minio.PutObjectOptions{
			ContentType: "application/octet-stream",
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("put %s/%s (at %s): %w", s.bucket, key, s.endpoint, err)
	}
	return nil
}

// removeKeys deletes keys, up to 1000 per request; missing keys are not
// an error.
func (s *Store) removeKeys(ctx context.Context, keys []string) error {
	for len(keys) > 0 {
		n := min(len(keys), 1000)
		part := keys[:n]
		keys = keys[n:]
		err := s.pol.Do(ctx, func(ctx context.Context) error {
			results, err := s.client.RemoveObjectsWithIter(ctx, s.bucket, func(yield func(minio.ObjectInfo) bool) {
				for _, k := range part {
					if !yield(minio.ObjectInfo{Key: k}) {
						return
					}
				}
			}, minio.RemoveObjectsOptions{})
			if err != nil {
				return err
			}
			var first error
			for r := range results {
				if r.Err != nil && !isNotFound(r.Err) && first == nil {
					first = fmt.Errorf("%s: %w", r.ObjectName, r.Err)
				}
			}
			return first
		})
		if err != nil {
			return fmt.Errorf("delete from s3 store %s at %s: %w", s.url, s.endpoint, err)
		}
	}
	return nil
}

// Sweep removes the debris of interrupted writes older than cutoff: pack
// objects without an index (packstore.Packs.Sweep) and multipart uploads
// under the prefix never completed (initiated before cutoff).
func (s *Store) Sweep(ctx context.Context, cutoff time.Time, dryRun bool) (store.Debris, error) {
	d, err := s.Packs.Sweep(ctx, cutoff, dryRun)
	if err != nil {
		return d, err
	}
	up, err := s.sweepUploads(ctx, cutoff, dryRun)
	d.Files, d.Bytes = d.Files+up.Files, d.Bytes+up.Bytes
	if err != nil {
		return d, fmt.Errorf("sweep %s: %w", s.url, err)
	}
	return d, nil
}
