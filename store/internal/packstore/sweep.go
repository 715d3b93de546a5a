package packstore

import (
	"context"
	"fmt"
	"time"

	"github.com/chunkvc/chunkvc/store"
)

// Sweep removes the pack objects without an index older than cutoff (a
// batch killed between a pack's upload and its index's). A pack is looked
// at once more just before it goes: one whose index was stored meanwhile
// stays. Sweep and DeleteMany are serialised within a Packs; across
// processes the caller holds the repository's lock, and writers of other
// repositories sharing the store are protected by cutoff only.
func (s *Packs) Sweep(ctx context.Context, cutoff time.Time, dryRun bool) (store.Debris, error) {
	s.deleting.Lock()
	defer s.deleting.Unlock()
	var d store.Debris
	if err := s.refresh(ctx); err != nil {
		return d, fmt.Errorf("sweep %s: %w", s.cfg.Name, err)
	}
	s.mu.RLock()
	var old []orphan
	var names []string
	for name, o := range s.orphans {
		if o.mod.Before(cutoff) {
			old = append(old, o)
			names = append(names, name)
		}
	}
	s.mu.RUnlock()
	for i, o := range old {
		idx := s.key(names[i], ".idx")
		_, err := s.b.Stat(ctx, idx)
		if err == nil {
			continue // indexed since the listing
		}
		if !s.b.IsNotFound(err) {
			return d, fmt.Errorf("sweep %s: stat %s: %w", s.cfg.Name, idx, err)
		}
		if !dryRun {
			if err := s.b.Delete(ctx, []string{o.key}); err != nil {
				return d, fmt.Errorf("sweep %s: %w", s.cfg.Name, err)
			}
		}
		d.Files++
		d.Bytes += o.size
	}
	return d, nil
}
