package s3

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/chunkvc/chunkvc/store"
)

var _ store.Sweeper = (*Store)(nil)

// Sweep removes the debris of interrupted writes older than cutoff: pack
// objects without an index (a batch killed between a pack's upload and its
// index's; their LastModified is when the upload completed) and multipart
// uploads under the prefix never completed (initiated before cutoff). A
// pack is looked at once more just before it goes: one whose index was
// stored meanwhile stays. Sweep and DeleteMany are serialised within a
// Store; across processes the caller holds the repository's lock, and
// writers of other repositories sharing the store are protected by cutoff
// only.
func (s *Store) Sweep(ctx context.Context, cutoff time.Time, dryRun bool) (store.Debris, error) {
	s.deleting.Lock()
	defer s.deleting.Unlock()
	var d store.Debris
	if err := s.refreshPacks(ctx); err != nil {
		return d, fmt.Errorf("sweep %s: %w", s.url, err)
	}
	s.ps.mu.RLock()
	var old []orphan
	var names []string
	for name, o := range s.ps.orphans {
		if o.mod.Before(cutoff) {
			old = append(old, o)
			names = append(names, name)
		}
	}
	s.ps.mu.RUnlock()
	for i, o := range old {
		idx := s.packKey(names[i], ".idx")
		err := s.pol.Do(ctx, func(ctx context.Context) error {
			_, err := s.client.StatObject(ctx, s.bucket, idx, minio.StatObjectOptions{})
			return err
		})
		if err == nil {
			continue // indexed since the listing
		}
		if !isNotFound(err) {
			return d, fmt.Errorf("sweep %s: stat %s/%s: %w", s.url, s.bucket, idx, err)
		}
		if !dryRun {
			if err := s.removeKeys(ctx, []string{o.key}); err != nil {
				return d, fmt.Errorf("sweep %s: %w", s.url, err)
			}
		}
		d.Files++
		d.Bytes += o.size
	}
	up, err := s.sweepUploads(ctx, cutoff, dryRun)
	d.Files, d.Bytes = d.Files+up.Files, d.Bytes+up.Bytes
	if err != nil {
		return d, fmt.Errorf("sweep %s: %w", s.url, err)
	}
	return d, nil
}

// sweepUploads aborts the multipart uploads under the prefix initiated
// before cutoff. The bucket's uploads are listed whole and filtered here:
// MinIO lists by an exact key or none, not by a shorter prefix.
func (s *Store) sweepUploads(ctx context.Context, cutoff time.Time, dryRun bool) (store.Debris, error) {
	var d store.Debris
	core := minio.Core{Client: s.client}
	var old []minio.ObjectMultipartInfo
	keyMarker, idMarker := "", ""
	for {
		var res minio.ListMultipartUploadsResult
		err := s.pol.Do(ctx, func(ctx context.Context) (err error) {
			res, err = core.ListMultipartUploads(ctx, s.bucket, "", keyMarker, idMarker, "", 1000)
			return err
		})
		if err != nil {
			return d, fmt.Errorf("list uploads in %s at %s: %w", s.bucket, s.endpoint, err)
		}
		for _, u := range res.Uploads {
			if strings.HasPrefix(u.Key, s.prefix) && u.Initiated.Before(cutoff) {
				old = append(old, u)
			}
		}
		if !res.IsTruncated || res.NextKeyMarker == "" && res.NextUploadIDMarker == "" {
			break
		}
		keyMarker, idMarker = res.NextKeyMarker, res.NextUploadIDMarker
	}
	for _, u := range old {
		var parts minio.ListObjectPartsResult
		err := s.pol.Do(ctx, func(ctx context.Context) (err error) {
			parts, err = core.ListObjectParts(ctx, s.bucket, u.Key, u.UploadID, 0, 10000)
			return err
		})
		if err != nil && !isNotFound(err) && errorCode(err) != "NoSuchUpload" {
			return d, fmt.Errorf("list parts of upload %s/%s: %w", s.bucket, u.Key, err)
		}
		if !dryRun {
			err := s.pol.Do(ctx, func(ctx context.Context) error {
				err := core.AbortMultipartUpload(ctx, s.bucket, u.Key, u.UploadID)
				if errorCode(err) == "NoSuchUpload" {
					return nil // completed or aborted meanwhile
				}
				return err
			})
			if err != nil {
				return d, fmt.Errorf("abort upload %s/%s: %w", s.bucket, u.Key, err)
			}
		}
		d.Files++
		for _, p := range parts.ObjectParts {
			d.Bytes += p.Size
		}
	}
	return d, nil
}
