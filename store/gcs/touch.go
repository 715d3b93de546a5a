package gcs

import (
	"context"
	"fmt"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
)

// Touch refreshes the age of object id (its updated time, the age List
// and Stat report) by copying its object onto itself with new metadata
// (a metadata patch alone moves that time on GCS but not on
// fake-gcs-server); the bytes stay, the generation is new. A packed object's
// pack is touched, all its objects with it. A gc elsewhere then spares the
// object for its grace period (repo/internal/gc lists again right before
// deleting, and a reload of the pack indexes takes the packs' new ages).
func (s *Store) Touch(ctx context.Context, id hashing.ID) error {
	return s.Packs.TouchObject(ctx, id)
}

// touchKey copies object key onto itself with new metadata (one request
// within a bucket, no bytes through the client) and returns its new age.
func (s *Store) touchKey(ctx context.Context, key string) (time.Time, error) {
	if err := s.pol.Acquire(ctx); err != nil {
		return time.Time{}, err
	}
	defer s.pol.Release()
	obj := s.bkt.Object(key)
	c := obj.CopierFrom(obj)
	c.ContentType = "application/octet-stream"
	c.Metadata = map[string]string{"touched": time.Now().UTC().Format(time.RFC3339Nano)}
	attrs, err := c.Run(ctx)
	if err != nil {
		return time.Time{}, fmt.Errorf("gs://%s/%s at %s: %w", s.bucket, key, s.endpoint, s.pol.GiveUp(err))
	}
	return attrs.Updated, nil
}
