package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/internal/writeback"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/internal/packidx"
	"github.com/chunkvc/chunkvc/store/internal/packset"
)

// DeleteMany removes objects; missing ones are not an error. Loose objects
// are removed; a pack left without objects is removed, index first; a pack
// that keeps some is rewritten into a new pack (published like a batch's)
// before the old one is removed. Kept objects stored as deltas against
// deleted ones are re-encoded, whole or against a kept ancestor, so they
// stay readable at every moment. DeleteMany refuses to run while a pack
// index is unreadable, since the deltas listed there are unknown. Debris
// of crashes is Sweep's.
//
// Calls are serialised within a Store; across processes the caller must
// hold the repository's lock.
func (s *Store) DeleteMany(ctx context.Context, ids []hashing.ID) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete objects in %s: %w", s.root, err)
	}
	s.deleting.Lock()
	defer s.deleting.Unlock()
	if len(ids) == 0 {
		return nil
	}
	if _, err := s.refresh(false); err != nil {
		return fmt.Errorf("delete objects in %s: %w", s.root, err)
	}
	if err := s.damagedIndexes(); err != nil {
		return fmt.Errorf("delete objects in %s: not while a pack index is unreadable: %w", s.root, err)
	}
	del := make(map[hashing.ID]bool, len(ids))
	for _, id := range ids {
		del[id] = true
	}
	var rewrite, drop []*packset.Pack
	for _, p := range s.affected(del) {
		if survivors(p, del) {
			rewrite = append(rewrite, p)
		} else {
			drop = append(drop, p)
		}
	}
	var replaced []*packset.Pack
	written := map[string]bool{}
	for _, p := range rewrite {
		np, err := s.rewrite(ctx, p, del)
		if err != nil {
			return fmt.Errorf("delete objects: rewrite %s: %w", s.packPath(p.Name, ".pack"), err)
		}
		// A rewrite that kept every entry as it was (an unreadable delta
		// kept as is) can produce the very same index, hence the same
		// name: its files are the new pack, not an old one to remove.
		if np == nil || np.Name != p.Name {
			replaced = append(replaced, p)
		}
		if np != nil {
			written[np.Name] = true
		}
	}
	if testHookBeforeRecheck != nil {
		testHookBeforeRecheck()
	}
	// A batch in another process may have published, since the packs were
	// read, a delta against an object about to go (the previous version of
	// its chunk). Look once more, just before anything is removed: if so,
	// remove nothing now. The rewritten packs are duplicates until the
	// next gc, which re-encodes that delta.
	if err := s.recheck(del, append(append([]*packset.Pack(nil), replaced...), drop...), written); err != nil {
		return fmt.Errorf("delete objects in %s: %w", s.root, err)
	}
	// Every old index before any old pack: an index never names a missing
	// pack, and a reader that finds a pack gone finds its replacement by
	// reloading the indexes.
	var errs []error
	old := append(replaced, drop...)
	unindexed := old[:0:0]
	for _, p := range old {
		if err := os.Remove(s.packPath(p.Name, ".idx")); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("delete objects: %w", err))
			continue
		}
		unindexed = append(unindexed, p)
	}
	for _, p := range unindexed {
		if err := os.Remove(s.packPath(p.Name, ".pack")); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("delete objects: %w", err))
		}
	}
	if len(old) > 0 {
		if err := writeback.SyncDir(filepath.Join(s.root, PackDir)); err != nil {
			errs = append(errs, fmt.Errorf("delete objects: %w", err))
		}
		s.unpublishPacks(unindexed)
	}
	for _, id := range ids {
		if err := os.Remove(s.path(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("delete object %s: %w", id.Short(), err))
		}
	}
	return errors.Join(errs...)
}

// recheck re-reads the packs folder and fails if a pack other than the old
// ones about to be removed and the ones DeleteMany just wrote holds a delta
// against an object of del.
func (s *Store) recheck(del map[hashing.ID]bool, old []*packset.Pack, written map[string]bool) error {
	if _, err := s.refresh(true); err != nil {
		return err
	}
	going := map[string]bool{}
	for _, p := range old {
		going[p.Name] = true
	}
	for id := range del {
		for _, p := range s.dependants(id) {
			if !going[p.Name] && !written[p.Name] {
				return fmt.Errorf("%w: pack %s, written meanwhile, holds a delta against object %s; nothing deleted, run gc again",
					ErrChanged, p.Name, id.Short())
			}
		}
	}
	return nil
}

// testHookBeforeRecheck lets a test publish a pack at the worst moment.
var testHookBeforeRecheck func()

// ErrChanged means the store changed under a DeleteMany in a way that made
// it stop before removing anything.
var ErrChanged = errors.New("store changed during delete")

// affected returns the packs that hold an object of del or a delta against
// one.
func (s *Store) affected(del map[hashing.ID]bool) []*packset.Pack {
	packs, total := s.packList()
	hit := make(map[*packset.Pack]bool)
	if len(del)*len(packs) < total {
		for id := range del {
			for _, p := range packs {
				if _, ok := p.Search(id); ok {
					hit[p] = true
				}
			}
			for _, p := range s.dependants(id) {
				hit[p] = true
			}
		}
	} else {
		for _, p := range packs {
			for _, e := range p.All() {
				if del[e.ID] || e.Encoding == packidx.Delta && del[e.Base] {
					hit[p] = true
					break
				}
			}
		}
	}
	var out []*packset.Pack
	for _, p := range packs {
		if hit[p] {
			out = append(out, p)
		}
	}
	return out
}

// survivors reports whether p keeps an object.
func survivors(p *packset.Pack, del map[hashing.ID]bool) bool {
	for _, e := range p.All() {
		if !del[e.ID] {
			return true
		}
	}
	return false
}

// rewrite writes and publishes a new pack of p's objects not in del,
// re-encoding deltas against objects in del. It keeps p's modification
// time, which is its objects' age for garbage collection.
func (s *Store) rewrite(ctx context.Context, p *packset.Pack, del map[hashing.ID]bool) (*packset.Pack, error) {
	fi, err := os.Stat(s.packPath(p.Name, ".pack"))
	if err != nil {
		return nil, err
	}
	src, err := s.openPack(p)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	tp, err := s.newTmpPack(false)
	if err != nil {
		return nil, err
	}
	for _, e := range p.All() {
		if del[e.ID] {
			continue
		}
		if err := ctx.Err(); err != nil {
			_ = discard([]*tmpPack{tp})
			return nil, err
		}
		stored, ne, err := s.survivor(ctx, src, e, del)
		if err != nil {
			_ = discard([]*tmpPack{tp})
			return nil, fmt.Errorf("object %s: %w", e.ID.Short(), err)
		}
		if err := tp.add(ne, stored); err != nil {
			_ = discard([]*tmpPack{tp})
			return nil, err
		}
	}
	return s.publish(tp, fi.ModTime(), false)
}

// survivor returns the bytes and entry under which e is kept: as it is,
// unless it is a delta against an object in del.
func (s *Store) survivor(ctx context.Context, src *os.File, e packidx.Entry, del map[hashing.ID]bool) ([]byte, packidx.Entry, error) {
	if e.Encoding != packidx.Delta || !del[e.Base] {
		b, err := readEntry(src, e)
		return b, e, err
	}
	raw, err := s.raw(ctx, e.ID, maxChain)
	if err == nil && hashing.Sum(raw) != e.ID {
		err = fmt.Errorf("%w: its bytes hash to %s", store.ErrCorrupt, hashing.Sum(raw).Short())
	}
	if errors.Is(err, store.ErrCorrupt) || errors.Is(err, store.ErrNotFound) {
		// Unreadable already: keep it as it is rather than block deletes.
		b, err := readEntry(src, e)
		return b, e, err
	}
	if err != nil {
		return nil, e, err
	}
	// The nearest ancestor that is kept makes the best base.
	like := e.Base
	for k := 0; k < maxChain && del[like]; k++ {
		r, ok := s.packed(like)
		if !ok || r.Entry().Encoding != packidx.Delta {
			like = hashing.ID{}
			break
		}
		like = r.Entry().Base
	}
	if del[like] {
		like = hashing.ID{}
	}
	o, err := s.encode(ctx, e.ID, raw, like, false, nil)
	if err != nil {
		return nil, e, err
	}
	defer o.release()
	return append([]byte(nil), o.stored...), o.entry(e.ID, len(raw)), nil
}
