package azure

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"golang.org/x/sync/errgroup"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
)

// octets is the content type of every blob.
var octets = blob.HTTPHeaders{BlobContentType: to.Ptr("application/octet-stream")}

// Put stores data under id. A blob already there with the same size is
// kept as it is (nothing is sent); one of another size is replaced.
// Objects up to Options.BlockSize go in one Put Blob, larger ones as staged
// blocks committed by one Put Block List; each request carries the MD5 of
// its bytes. The blob is visible only once complete. An object the Store
// knows to be packed is not stored again.
func (s *Store) Put(ctx context.Context, id hashing.ID, data []byte) error {
	return s.Packs.Put(ctx, id, data)
}

// putLoose is Put of a loose object; it reports whether it stored it.
func (s *Store) putLoose(ctx context.Context, id hashing.ID, data []byte) (bool, error) {
	key := s.key(id)
	info, err := s.statKey(ctx, key)
	if err == nil && info.Size == int64(len(data)) {
		return false, nil
	}
	if err != nil && !isNotFound(err) {
		return false, s.failed("put", id, err)
	}
	if err := s.upload(ctx, key, bytes.NewReader(data), int64(len(data))); err != nil {
		return false, s.failed("put", id, err)
	}
	return true, nil
}

// upload writes size bytes of r to blob key, in one request or as staged
// blocks.
func (s *Store) upload(ctx context.Context, key string, r io.ReaderAt, size int64) error {
	bc := s.client.NewBlockBlobClient(key)
	if size <= s.opt.BlockSize {
		sum, err := md5Of(r, 0, size)
		if err != nil {
			return err
		}
		return s.pol.Do(ctx, func(ctx context.Context) error {
			_, err := bc.Upload(ctx, streaming.NopCloser(io.NewSectionReader(r, 0, size)), &blockblob.UploadOptions{
				HTTPHeaders:             &octets,
				TransactionalValidation: blob.TransferValidationTypeMD5(sum),
			})
			return err
		})
	}
	var ids []string
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(1, min(4, s.opt.Connections/2))) // one object leaves slots for others
	for i, off := 0, int64(0); off < size; i, off = i+1, off+s.opt.BlockSize {
		n := min(s.opt.BlockSize, size-off)
		bid := blockID(i)
		ids = append(ids, bid)
		g.Go(func() error {
			sum, err := md5Of(r, off, n)
			if err != nil {
				return fmt.Errorf("read block %d: %w", i, err)
			}
			err = s.pol.Do(gctx, func(ctx context.Context) error {
				_, err := bc.StageBlock(ctx, bid, streaming.NopCloser(io.NewSectionReader(r, off, n)), &blockblob.StageBlockOptions{
					TransactionalValidation: blob.TransferValidationTypeMD5(sum),
				})
				return err
			})
			if err != nil {
				return fmt.Errorf("stage block %d: %w", i, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return s.pol.Do(ctx, func(ctx context.Context) error {
		_, err := bc.CommitBlockList(ctx, ids, &blockblob.CommitBlockListOptions{HTTPHeaders: &octets})
		return err
	})
}

// md5Of returns the MD5 of n bytes of r from off.
func md5Of(r io.ReaderAt, off, n int64) ([]byte, error) {
	h := md5.New()
	if _, err := io.Copy(h, io.NewSectionReader(r, off, n)); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}

// blockID is the ID of block i of a blob: the same length for every block,
// as the service requires.
func blockID(i int) string {
	return base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "chunkvc-block-%08d", i))
}

// Stat returns the size and age of object id: from the pack indexes if it
// is packed (Modified is then its pack's), else from its loose blob.
func (s *Store) Stat(ctx context.Context, id hashing.ID) (store.Info, error) {
	return s.Packs.Stat(ctx, id)
}

// statLoose is Stat of the loose object.
func (s *Store) statLoose(ctx context.Context, id hashing.ID) (store.Info, error) {
	info, err := s.statKey(ctx, s.key(id))
	if err != nil {
		return store.Info{}, s.failed("stat", id, err)
	}
	info.ID = id
	return info, nil
}

// statKey returns the size and age of blob key.
func (s *Store) statKey(ctx context.Context, key string) (store.Info, error) {
	var info store.Info
	err := s.pol.Do(ctx, func(ctx context.Context) error {
		p, err := s.client.NewBlobClient(key).GetProperties(ctx, nil)
		if err != nil {
			return err
		}
		info.Size = deref(p.ContentLength)
		if p.LastModified != nil {
			info.Modified = modified(*p.LastModified)
		}
		return nil
	})
	return info, err
}

// modified is the latest instant a blob reported modified at t may have
// been changed: the service gives whole seconds, and an age that errs
// young is the safe side for a garbage collection's grace period.
func modified(t time.Time) time.Time {
	if t.Nanosecond() == 0 {
		return t.Add(time.Second - time.Nanosecond)
	}
	return t
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// Touch refreshes the age of object id by setting its blob's metadata,
// which the service counts as a change (Last-Modified); the bytes stay. A
// packed object's pack is touched, all its objects with it.
func (s *Store) Touch(ctx context.Context, id hashing.ID) error {
	return s.Packs.TouchObject(ctx, id)
}

// touchKey sets blob key's metadata and returns its new age.
func (s *Store) touchKey(ctx context.Context, key string) (time.Time, error) {
	bc := s.client.NewBlobClient(key)
	stamp := time.Now().UTC().Format(time.RFC3339Nano)
	err := s.pol.Do(ctx, func(ctx context.Context) error {
		_, err := bc.SetMetadata(ctx, map[string]*string{"touched": &stamp}, nil)
		return err
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("blob %s/%s at %s: %w", s.container, key, s.endpoint, explain(err))
	}
	info, err := s.statKey(ctx, key)
	return info.Modified, err
}

// Delete removes object id, loose or packed; a missing object is not an
// error. It is DeleteMany of one object.
func (s *Store) Delete(ctx context.Context, id hashing.ID) error {
	return s.DeleteMany(ctx, []hashing.ID{id})
}

// deleteKey removes blob key; a missing blob is not an error.
func (s *Store) deleteKey(ctx context.Context, key string) error {
	return s.pol.Do(ctx, func(ctx context.Context) error {
		_, err := s.client.NewBlobClient(key).Delete(ctx, nil)
		if isNotFound(err) {
			return nil // gone already, maybe by an earlier attempt
		}
		return err
	})
}

// List calls fn for every object under the prefix whose blob name has the
// <2 hex>/<64 hex> form, skipping other blobs, then for every packed
// object (one both loose and packed is reported once). The listing is
// paged; a page that fails is fetched again, so every object is reported
// once. It fails, naming them, while a pack index cannot be used.
func (s *Store) List(ctx context.Context, fn func(store.Info) error) error {
	return s.Packs.List(ctx, fn)
}

// listLoose is List of the loose objects.
func (s *Store) listLoose(ctx context.Context, fn func(store.Info) error) error {
	err := s.listPrefix(ctx, s.prefix, func(b *container.BlobItem) error {
		id, ok := s.parseKey(deref(b.Name))
		if !ok {
			return nil
		}
		info := store.Info{ID: id}
		if b.Properties != nil {
			info.Size = deref(b.Properties.ContentLength)
			if b.Properties.LastModified != nil {
				info.Modified = modified(*b.Properties.LastModified)
			}
		}
		return fn(info)
	})
	if err != nil {
		return fmt.Errorf("list azure store %s: %w", s.url, err)
	}
	return nil
}

// listPrefix calls fn for every blob whose name starts with prefix, in
// name order, on the caller's goroutine; no slot is held while fn runs.
// An error from fn is returned as it is.
func (s *Store) listPrefix(ctx context.Context, prefix string, fn func(*container.BlobItem) error) error {
	var marker *string
	for {
		var page container.ListBlobsFlatResponse
		err := s.pol.Do(ctx, func(ctx context.Context) (err error) {
			pager := s.client.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &prefix, Marker: marker})
			page, err = pager.NextPage(ctx)
			return err
		})
		if err != nil {
			return fmt.Errorf("at %s: %w", s.endpoint, explain(err))
		}
		if page.Segment != nil {
			for _, b := range page.Segment.BlobItems {
				if err := fn(b); err != nil {
					return err
				}
			}
		}
		if deref(page.NextMarker) == "" {
			return ctx.Err()
		}
		marker = page.NextMarker
	}
}

// parseKey returns the ID of an object's blob name, or false for others.
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

// getAll reads blob key whole, failing when it is larger than limit.
func (s *Store) getAll(ctx context.Context, key string, limit int64) ([]byte, error) {
	var b []byte
	err := s.pol.Do(ctx, func(ctx context.Context) error {
		resp, err := s.client.NewBlobClient(key).DownloadStream(ctx, nil)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if n := deref(resp.ContentLength); n > limit {
			return fmt.Errorf("%d bytes is more than %d", n, limit)
		}
		b, err = io.ReadAll(io.LimitReader(resp.Body, limit+1))
		if err == nil && int64(len(b)) != deref(resp.ContentLength) {
			err = fmt.Errorf("read %d of %d bytes: %w", len(b), deref(resp.ContentLength), io.ErrUnexpectedEOF)
		}
		return err
	})
	return b, err
}

// isBadRange reports whether err is the service's answer for a range
// outside the blob.
func isBadRange(err error) bool {
	return statusOf(err) == http.StatusRequestedRangeNotSatisfiable
}
