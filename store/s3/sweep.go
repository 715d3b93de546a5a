package s3

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/chunkvc/chunkvc/store"
)

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
