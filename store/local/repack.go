package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/chunkvc/chunkvc/internal/writeback"
	"github.com/chunkvc/chunkvc/store/internal/packset"
)

// Every commit adds a pack, and every command reads every index: 2,000
// small packs cost a fresh Store about 40 ms before its first answer
// (measured). Repack folds small packs into one.
var (
	repackSmall int64 = 64 << 20 // packs under this size are merged
	repackMin         = 32       // when there are at least this many
)

// Repack merges the store's small packs into one when there are enough of
// them, and reports how many it merged. Objects keep their stored bytes (a
// delta stays a delta against the same base, wherever that lives). As in
// DeleteMany, the new pack and its index are durable before any old index
// is removed, and every old index goes before any old pack: a crash leaves
// duplicate copies, never a missing object.
func (s *Store) Repack(ctx context.Context) (int, error) {
	s.deleting.Lock()
	defer s.deleting.Unlock()
	if _, err := s.refresh(false); err != nil {
		return 0, fmt.Errorf("repack %s: %w", s.root, err)
	}
	if err := s.damagedIndexes(); err != nil {
		return 0, fmt.Errorf("repack %s: not while a pack index is unreadable: %w", s.root, err)
	}
	packs, mapped := s.snapshot()
	var small []int
	var total int64
	for k, p := range packs {
		if p.PackSize < repackSmall && total+p.PackSize <= packMax {
			small = append(small, k)
			total += p.PackSize
		}
	}
	if len(small) < repackMin {
		return 0, nil
	}
	tp, err := s.newTmpPack(false)
	if err != nil {
		return 0, fmt.Errorf("repack %s: %w", s.root, err)
	}
	var mod time.Time
	var old []*packset.Pack
	for _, k := range small {
		p := packs[k]
		pmod, err := s.copyMapped(ctx, tp, p, mapped[k])
		if err != nil {
			_ = discard([]*tmpPack{tp})
			return 0, fmt.Errorf("repack %s: %w", s.packPath(p.Name, ".pack"), err)
		}
		if pmod.After(mod) {
			mod = pmod // the youngest: no object looks older to gc than it was
		}
		old = append(old, p)
	}
	np, err := s.publish(tp, mod, false)
	if err != nil {
		return 0, fmt.Errorf("repack %s: %w", s.root, err)
	}
	var errs []error
	var unindexed []*packset.Pack
	for _, p := range old {
		if p.Name == np.Name {
			continue
		}
		if err := os.Remove(s.packPath(p.Name, ".idx")); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		unindexed = append(unindexed, p)
	}
	for _, p := range unindexed {
		if err := os.Remove(s.packPath(p.Name, ".pack")); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := writeback.SyncDir(filepath.Join(s.root, PackDir)); err != nil {
		errs = append(errs, err)
	}
	s.unpublishPacks(unindexed)
	if err := errors.Join(errs...); err != nil {
		return len(unindexed), fmt.Errorf("repack %s: %w", s.root, err)
	}
	return len(unindexed), nil
}

// copyMapped appends to tp the stored bytes of p's entries that are the
// Store's copy of their object (mask), and returns p's modification time.
func (s *Store) copyMapped(ctx context.Context, tp *tmpPack, p *packset.Pack, mask []bool) (time.Time, error) {
	fi, err := os.Stat(s.packPath(p.Name, ".pack"))
	if err != nil {
		return time.Time{}, err
	}
	src, err := s.openPack(p)
	if err != nil {
		return time.Time{}, err
	}
	defer src.Close()
	for i, e := range p.All() {
		if !mask[i] {
			continue // a copy the Store reads from another pack
		}
		if err := ctx.Err(); err != nil {
			return time.Time{}, err
		}
		b, err := readEntry(src, e)
		if err != nil {
			return time.Time{}, err
		}
		if err := tp.add(e, b); err != nil {
			return time.Time{}, err
		}
	}
	return fi.ModTime(), nil
}
