// Package packset keeps what a store knows of its published packs: which
// pack holds each object, and which indexes cannot be used. It does no
// I/O; store/local and store/s3 read the indexes and feed it.
package packset

import (
	"encoding/binary"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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
	packidx.Table
}

// Ref locates one object: entry I of pack P.
type Ref struct {
	P *Pack
	I int
}

// Entry returns the index entry r points at.
func (r Ref) Entry() packidx.Entry { return r.P.Table.Entry(r.I) }

// Set maps objects to the packs that hold them. An object found in several
// packs (two processes may pack the same object) maps to the copy with the
// shortest delta chain; on a tie the copy added first stays. The zero Set
// is empty and ready to use.
//
// A Set is not safe for concurrent use: the store guards it with its own
// lock, which also covers the store's other knowledge of its packs. Lookup
// alone may run concurrently with other Lookups (under a read lock).
//
// Lookups first binary-search each pack's sorted index; a map from object
// to copy is built only once they have outnumbered 1/64 of the entries. A
// command that looks up a few objects (a re-commit's new chunks) then
// does not pay for mapping every object of a large store.
//
// The map is keyed by the first 8 bytes of an ID and holds a pack's
// ordinal and an entry's index, no pointers: a third of the memory of a
// map by whole ID to Ref, and nothing for the collector to scan, for
// every chunk a checkout of 500,000 tiles reads. IDs that share their
// first 8 bytes (some 2^-64 of pairs, or a crafted store) mark theirs as
// shared, and an object under a shared prefix is found by searching the
// packs.
type Set struct {
	packs   map[string]*Pack
	order   []*Pack                              // as added: the first copy wins a tie
	deps    atomic.Pointer[map[hashing.ID][]Ref] // delta entries by base; nil until asked for
	damaged map[string]error                     // pack name → why its index cannot be used
	entries int

	lookups atomic.Int64                      // since the map was last dropped
	objs    atomic.Pointer[map[uint64]uint64] // ID prefix → slot; nil until built
	build   sync.Mutex
}

// A slot of the map: the ordinal in order of the pack holding an object's
// best copy (high 32 bits) and the entry's index (low 32), or shared.
const shared = ^uint64(0)

func prefixOf(id hashing.ID) uint64 { return binary.BigEndian.Uint64(id[:8]) }

func slotOf(ord, i int) uint64 { return uint64(ord)<<32 | uint64(uint32(i)) }

// ref returns the Ref a slot other than shared names.
func (s *Set) ref(slot uint64) Ref { return Ref{s.order[slot>>32], int(uint32(slot))} }

// Lookup returns where id is packed.
func (s *Set) Lookup(id hashing.ID) (Ref, bool) {
	m := s.objs.Load()
	if m == nil && s.lookups.Add(1) > int64(s.entries/64)+64 {
		m = s.index()
	}
	if m == nil {
		return s.search(id)
	}
	return s.mapped(*m, id)
}

// mapped returns where m says id is.
func (s *Set) mapped(m map[uint64]uint64, id hashing.ID) (Ref, bool) {
	slot, ok := m[prefixOf(id)]
	switch {
	case !ok:
		return Ref{}, false
	case slot == shared:
		return s.search(id)
	}
	if r := s.ref(slot); r.P.Table.ID(r.I) == id {
		return r, true
	}
	return Ref{}, false // another object under its prefix
}

// search finds id's best copy by binary search in every pack.
func (s *Set) search(id hashing.ID) (Ref, bool) {
	var best Ref
	found := false
	for _, p := range s.order {
		if i, ok := p.Search(id); ok && (!found || p.Table.Entry(i).Depth < best.Entry().Depth) {
			best, found = Ref{p, i}, true
		}
	}
	return best, found
}

// index returns the map from object to best copy, building it if needed.
func (s *Set) index() *map[uint64]uint64 {
	s.build.Lock()
	defer s.build.Unlock()
	if m := s.objs.Load(); m != nil {
		return m
	}
	m := make(map[uint64]uint64, s.entries)
	for ord := range s.order {
		s.mapInto(m, ord)
	}
	s.objs.Store(&m)
	return &m
}

// dependants returns the map of deltas by base, building it if needed.
func (s *Set) dependants() map[hashing.ID][]Ref {
	s.build.Lock()
	defer s.build.Unlock()
	if d := s.deps.Load(); d != nil {
		return *d
	}
	d := make(map[hashing.ID][]Ref)
	for _, p := range s.order {
		depsInto(d, p)
	}
	s.deps.Store(&d)
	return d
}

// mapInto maps the objects of the pack of ordinal ord in m where its copy
// is better than m's.
func (s *Set) mapInto(m map[uint64]uint64, ord int) {
	for i, e := range s.order[ord].All() {
		k := prefixOf(e.ID)
		old, ok := m[k]
		switch {
		case !ok:
		case old == shared:
			continue
		case s.ref(old).Entry().ID != e.ID:
			m[k] = shared
			continue
		case s.ref(old).Entry().Depth <= e.Depth:
			continue
		}
		m[k] = slotOf(ord, i)
	}
}

// Pack returns the pack called name, or nil.
func (s *Set) Pack(name string) *Pack { return s.packs[name] }

// Add maps p's objects, unless the set has a pack called p.Name already.
// It reads none of p's entries unless lookups or Dependants have needed
// every object already: adding the packs of a large store costs nothing
// per object.
func (s *Set) Add(p *Pack) {
	if s.packs[p.Name] != nil {
		return
	}
	if s.packs == nil {
		s.packs = make(map[string]*Pack)
	}
	s.packs[p.Name] = p
	s.order = append(s.order, p)
	s.entries += p.Len()
	if d := s.deps.Load(); d != nil {
		depsInto(*d, p)
	}
	if m := s.objs.Load(); m != nil {
		s.mapInto(*m, len(s.order)-1)
	}
}

// depsInto records p's deltas in d.
func depsInto(d map[hashing.ID][]Ref, p *Pack) {
	for i, e := range p.All() {
		if e.Encoding == packidx.Delta {
			d[e.Base] = append(d[e.Base], Ref{p, i})
		}
	}
}

// Remove unmaps p's objects, falling back on copies in other packs, if p
// is in the set (a pack of the same name that is not p stays).
func (s *Set) Remove(p *Pack) {
	if s.packs[p.Name] != p {
		return
	}
	delete(s.packs, p.Name)
	s.order = slices.DeleteFunc(s.order, func(q *Pack) bool { return q == p })
	s.entries -= p.Len()
	// Rebuilt from the remaining packs when lookups call for them again.
	s.objs.Store(nil)
	s.deps.Store(nil)
	s.lookups.Store(0)
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
		n += p.Len()
	}
	slices.SortFunc(ps, func(a, b *Pack) int { return strings.Compare(a.Name, b.Name) })
	return ps, n
}

// Dependants returns the packs holding deltas against id, once per delta.
func (s *Set) Dependants(id hashing.ID) []*Pack {
	var ps []*Pack
	for _, r := range s.dependants()[id] {
		ps = append(ps, r.P)
	}
	return ps
}

// Snapshot returns the packs sorted by name, each with a mask of the
// entries that are the mapped copy of their object.
func (s *Set) Snapshot() ([]*Pack, [][]bool) {
	ps, _ := s.Packs()
	m := *s.index()
	masks := make([][]bool, len(ps))
	for k, p := range ps {
		masks[k] = make([]bool, p.Len())
		for i, e := range p.All() {
			r, ok := s.mapped(m, e.ID)
			masks[k][i] = ok && r == Ref{p, i}
		}
	}
	return ps, masks
}
