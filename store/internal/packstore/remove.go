package packstore

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store/internal/packidx"
	"github.com/chunkvc/chunkvc/store/internal/packset"
)

// DeleteMany removes objects; missing ones are not an error. Their loose
// objects are deleted (up to 1000 per request). A pack left without
// objects loses its index, then its pack object; a pack that keeps some is
// rewritten: its kept objects are copied with ranged reads into a new pack,
// which is stored with its index before the old index, then the old pack,
// are deleted. Readers thus find every kept object at every moment. A
// rewritten pack counts as new for Modified. DeleteMany first reloads the
// pack indexes and refuses to run while one cannot be used. Packs left
// without an index are Sweep's.
//
// Calls are serialised within a Store; across processes the caller must
// hold the repository's lock.
func (s *Packs) DeleteMany(ctx context.Context, ids []hashing.ID) error {
	s.deleting.Lock()
	defer s.deleting.Unlock()
	if err := s.refresh(ctx); err != nil {
		return fmt.Errorf("delete objects in %s: %w", s.cfg.Name, err)
	}
	if err := s.damagedIndexes(); err != nil {
		return fmt.Errorf("delete objects in %s: not while a pack index is unusable: %w", s.cfg.Name, err)
	}
	del := make(map[hashing.ID]bool, len(ids))
	for _, id := range ids {
		del[id] = true
	}
	packs, _ := s.snapshot()
	var old []*packset.Pack
	for _, p := range packs {
		hit, keep := false, false
		for _, e := range p.All() {
			if del[e.ID] {
				hit = true
			} else {
				keep = true
			}
		}
		if !hit {
			continue
		}
		if keep {
			if err := s.rewrite(ctx, p, del); err != nil {
				return fmt.Errorf("delete objects: rewrite %s: %w", s.key(p.Name, ".pack"), err)
			}
		}
		old = append(old, p)
	}
	if len(old) > 0 {
		// Every old index before any old pack: an index never names a
		// missing pack.
		var idx, packKeys []string
		for _, p := range old {
			idx = append(idx, s.key(p.Name, ".idx"))
			packKeys = append(packKeys, s.key(p.Name, ".pack"))
		}
		if err := s.b.Delete(ctx, idx); err != nil {
			return fmt.Errorf("delete objects: %w", err)
		}
		s.unpublish(old)
		if err := s.b.Delete(ctx, packKeys); err != nil {
			return fmt.Errorf("delete objects: %w", err)
		}
	}
	keys := make([]string, 0, len(ids))
	for _, id := range ids {
		keys = append(keys, s.cfg.Loose.Key(id))
	}
	if err := s.b.Delete(ctx, keys); err != nil {
		return fmt.Errorf("delete objects: %w", err)
	}
	return nil
}

// rewrite stores a new pack, with its index, of p's objects not in del.
// Each run of kept objects that lie back to back is copied with one
// ranged read.
func (s *Packs) rewrite(ctx context.Context, p *packset.Pack, del map[hashing.ID]bool) error {
	var kept []packidx.Entry
	for _, e := range p.All() {
		if !del[e.ID] {
			kept = append(kept, e)
		}
	}
	slices.SortFunc(kept, func(a, b packidx.Entry) int { return cmp.Compare(a.Offset, b.Offset) })
	tp, err := newTmpPack()
	if err != nil {
		return err
	}
	defer tp.discard()
	key := s.key(p.Name, ".pack")
	for i := 0; i < len(kept); {
		// kept[i:j] is a run: each entry starts where the one before ends.
		j, start, end := i+1, kept[i].Offset, kept[i].Offset+kept[i].Stored
		for j < len(kept) && kept[j].Offset == end {
			end += kept[j].Stored
			j++
		}
		at := tp.size
		if end > start {
			rd, err := s.b.OpenRange(ctx, kept[i].ID, key, start, end)
			if err != nil {
				return err
			}
			n, err := io.Copy(io.NewOffsetWriter(tp.f, at), rd)
			_ = rd.Close()
			if err != nil {
				return err
			}
			if n != end-start {
				return fmt.Errorf("read %d bytes at %d of %s, want %d", n, start, key, end-start)
			}
		}
		for _, e := range kept[i:j] {
			e.Offset = at + e.Offset - start
			tp.entries = append(tp.entries, e)
		}
		tp.size += end - start
		i = j
	}
	if err := s.uploadPack(ctx, tp); err != nil {
		return err
	}
	if err := s.putBytes(ctx, s.key(tp.name, ".idx"), tp.idx); err != nil {
		// The index may be stored all the same: keep the pack it names.
		return err
	}
	s.publish(&packset.Pack{Name: tp.name, Mod: tp.mod, Table: packidx.Index{PackSize: tp.size, Entries: tp.entries}.Table()})
	return nil
}
