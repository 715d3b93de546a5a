// Package packset keeps what a store knows of its published packs: which
// pack holds each object, and which indexes cannot be used. It does no
// I/O; store/local and store/s3 read the indexes and feed it.
package packset

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store/internal/packidx"
)

// Pack is a published pack: its name (pack-<hex>, the checksum of its
// index, without extension) and its index. Mod is when the pack was
// stored, for a store that keeps it in memory; zero otherwise. All
// immutable.
type Pack struct {
	Name string
	Mod  time.Time
	packidx.Index
}

// Ref locates one object: entry I of pack P.
type Ref struct {
	P *Pack
	I int
}

// Entry returns the index entry r points at.
func (r Ref) Entry() packidx.Entry { return r.P.Entries[r.I] }

// Set maps objects to the packs that hold them. An object found in several
// packs (two processes may pack the same object) maps to the copy with the
// shortest delta chain; on a tie the copy mapped first stays. The zero Set
// is empty and ready to use.
//
// A Set is not safe for concurrent use: the store guards it with its own
// lock, which also covers the store's other knowledge of its packs.
type Set struct {
	packs   map[string]*Pack
	objs    map[hashing.ID]Ref
	deps    map[hashing.ID][]Ref // delta entries by base
	damaged map[string]error     // pack name → why its index cannot be used
}

// Lookup returns where id is packed.
func (s *Set) Lookup(id hashing.ID) (Ref, bool) {
	r, ok := s.objs[id]
	return r, ok
}

// Pack returns the pack called name, or nil.
func (s *Set) Pack(name string) *Pack { return s.packs[name] }

// Add maps p's objects, unless the set has a pack called p.Name already.
func (s *Set) Add(p *Pack) {
	if s.packs[p.Name] != nil {
		return
	}
	if s.packs == nil {
		s.packs = make(map[string]*Pack)
		s.objs = make(map[hashing.ID]Ref)
		s.deps = make(map[hashing.ID][]Ref)
	}
	s.packs[p.Name] = p
	for i, e := range p.Entries {
		if e.Encoding == packidx.Delta {
			s.deps[e.Base] = append(s.deps[e.Base], Ref{p, i})
		}
		if old, ok := s.objs[e.ID]; ok && old.Entry().Depth <= e.Depth {
			continue
		}
		s.objs[e.ID] = Ref{p, i}
	}
}

// Remove unmaps p's objects, falling back on copies in other packs, if p
// is in the set (a pack of the same name that is not p stays).
func (s *Set) Remove(p *Pack) {
	if s.packs[p.Name] != p {
		return
	}
	delete(s.packs, p.Name)
	var orphans []hashing.ID
	for _, e := range p.Entries {
		if e.Encoding == packidx.Delta {
			deps := slices.DeleteFunc(s.deps[e.Base], func(r Ref) bool { return r.P == p })
			if len(deps) == 0 {
				delete(s.deps, e.Base)
			} else {
				s.deps[e.Base] = deps
			}
		}
		if r, ok := s.objs[e.ID]; ok && r.P == p {
			delete(s.objs, e.ID)
			orphans = append(orphans, e.ID)
		}
	}
	if len(orphans) == 0 {
		return
	}
	for _, other := range s.packs {
		for _, id := range orphans {
			i, ok := other.Search(id)
			if !ok {
				continue
			}
			if old, ok := s.objs[id]; !ok || other.Entries[i].Depth < old.Entry().Depth {
				s.objs[id] = Ref{other, i}
			}
		}
	}
}

// Update brings the set in line with a fresh read of the packs: it
// removes the packs whose name keep rejects, adds added and records
// damaged (pack name → why its index cannot be used) in place of the
// damaged indexes known so far.
func (s *Set) Update(keep func(name string) bool, added []*Pack, damaged map[string]error) {
	for name, p := range s.packs {
		if !keep(name) {
			s.Remove(p)
		}
	}
	for _, p := range added {
		s.Add(p)
	}
	s.damaged = damaged
}

// Damaged returns an error naming every index that cannot be used, by pack
// name, or nil.
func (s *Set) Damaged() error {
	names := slices.Sorted(maps.Keys(s.damaged))
	errs := make([]error, len(names))
	for i, name := range names {
		errs[i] = s.damaged[name]
	}
	return errors.Join(errs...)
}

// Packs returns the packs sorted by name, and the number of entries they
// hold.
func (s *Set) Packs() ([]*Pack, int) {
	ps, n := make([]*Pack, 0, len(s.packs)), 0
	for _, p := range s.packs {
		ps = append(ps, p)
		n += len(p.Entries)
	}
	slices.SortFunc(ps, func(a, b *Pack) int { return strings.Compare(a.Name, b.Name) })
	return ps, n
}

// Dependants returns the packs holding deltas against id, once per delta.
func (s *Set) Dependants(id hashing.ID) []*Pack {
	var ps []*Pack
	for _, r := range s.deps[id] {
		ps = append(ps, r.P)
	}
	return ps
}

// Snapshot returns the packs sorted by name, each with a mask of the
// entries that are the mapped copy of their object.
func (s *Set) Snapshot() ([]*Pack, [][]bool) {
	ps, _ := s.Packs()
	masks := make([][]bool, len(ps))
	for k, p := range ps {
		masks[k] = make([]bool, len(p.Entries))
		for i, e := range p.Entries {
			masks[k][i] = s.objs[e.ID] == Ref{p, i}
		}
	}
	return ps, masks
}
