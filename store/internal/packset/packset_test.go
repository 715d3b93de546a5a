package packset

import (
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store/internal/packidx"
)

func id(n byte) hashing.ID { return hashing.ID{n} }

// pack returns a pack called name whose entries are (object, delta depth)
// pairs, in ID order; an entry of depth > 0 is a delta against object 0.
func pack(name string, objs ...[2]byte) *Pack {
	var ix packidx.Index
	for _, o := range objs {
		e := packidx.Entry{ID: id(o[0]), Depth: o[1]}
		if o[1] > 0 {
			e.Encoding, e.Base = packidx.Delta, id(0)
		}
		ix.Entries = append(ix.Entries, e)
	}
	return &Pack{Name: name, Table: ix.Table()}
}

func TestSet(t *testing.T) {
	a := pack("a", [2]byte{1, 2}, [2]byte{2, 0})
	b := pack("b", [2]byte{1, 1}, [2]byte{2, 0})
	c := pack("c", [2]byte{1, 3})
	var s Set
	for _, p := range []*Pack{a, b, c, pack("b")} {
		s.Add(p)
	}
	mapped := func(obj byte) *Pack {
		r, ok := s.Lookup(id(obj))
		if !ok {
			return nil
		}
		return r.P
	}
	if mapped(1) != b || mapped(2) != a {
		t.Fatalf("after Add: 1 in %v, 2 in %v; want b (shortest chain), a (first copy)", mapped(1), mapped(2))
	}
	if got := s.Dependants(id(0)); len(got) != 3 {
		t.Errorf("Dependants = %d packs, want 3", len(got))
	}
	ps, masks := s.Snapshot()
	if len(ps) != 3 || ps[0] != a || ps[1] != b || ps[2] != c {
		t.Fatalf("Snapshot packs = %v, want a, b, c", ps)
	}
	if want := [][]bool{{false, true}, {true, false}, {false}}; !slices.EqualFunc(masks, want, slices.Equal) {
		t.Errorf("Snapshot masks = %v, want %v", masks, want)
	}

	s.Remove(pack("b")) // another pack of the same name: ignored
	if mapped(1) != b {
		t.Fatalf("Remove of a stranger unmapped b")
	}
	s.Remove(b)
	if mapped(1) != a || mapped(2) != a || s.Pack("b") != nil {
		t.Errorf("after Remove(b): 1 in %v, 2 in %v; want a, a", mapped(1), mapped(2))
	}
	if got := s.Dependants(id(0)); len(got) != 2 {
		t.Errorf("Dependants after Remove = %d packs, want 2", len(got))
	}

	bad := errors.New("bad index")
	s.Update(func(name string) bool { return name != "a" }, nil, map[string]error{"d": bad})
	if mapped(1) != c || mapped(2) != nil {
		t.Errorf("after Update: 1 in %v, 2 in %v; want c, nowhere", mapped(1), mapped(2))
	}
	if err := s.Damaged(); !errors.Is(err, bad) {
		t.Errorf("Damaged = %v, want %v", err, bad)
	}
	if _, n := s.Packs(); n != 1 {
		t.Errorf("Packs holds %d entries, want 1", n)
	}
}

// TestSearchAndMapAgree: the answers of the binary searches that serve the
// first lookups and of the map built once lookups pile up are the same,
// and removing a pack takes effect either way.
func TestSearchAndMapAgree(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var s Set
	var all []hashing.ID
	for k := range 6 {
		var ix packidx.Index
		seen := map[hashing.ID]bool{}
		for range 300 {
			var id hashing.ID
			rng.Read(id[:])
			switch n := rng.Intn(6); {
			case len(all) > 0 && n < 2:
				id = all[rng.Intn(len(all))] // a copy of an object another pack holds
			case len(all) > 0 && n == 2:
				copy(id[:8], all[rng.Intn(len(all))][:8]) // another object under a mapped prefix
			}
			if seen[id] {
				continue
			}
			seen[id] = true
			all = append(all, id)
			ix.Entries = append(ix.Entries, packidx.Entry{ID: id, Depth: uint8(rng.Intn(3))})
		}
		slices.SortFunc(ix.Entries, func(a, b packidx.Entry) int { return hashing.Compare(a.ID, b.ID) })
		s.Add(&Pack{Name: fmt.Sprintf("p%d", k), Table: ix.Table()})
	}
	missing := hashing.ID{0xff, 0xfe}
	check := func(stage string) map[hashing.ID]Ref {
		t.Helper()
		got := map[hashing.ID]Ref{}
		for _, id := range all {
			r, ok := s.search(id)
			m, mok := s.mapped(*s.index(), id)
			if ok != mok || r != m {
				t.Fatalf("%s: %s: search %v %v, map %v %v", stage, id.Short(), r, ok, m, mok)
			}
			if ok {
				got[id] = r
			}
		}
		if _, ok := s.Lookup(missing); ok {
			t.Fatalf("%s: a missing object was found", stage)
		}
		for _, id := range all[:50] {
			id[31] ^= 0x80 // absent, its prefix mapped
			if r, ok := s.mapped(*s.index(), id); ok {
				t.Fatalf("%s: an absent object sharing a prefix was found at %v", stage, r)
			}
		}
		return got
	}
	if s.objs.Load() != nil {
		t.Fatal("the map was built before any lookup")
	}
	check("all packs")
	victim := s.order[2]
	s.Remove(victim)
	if s.objs.Load() != nil {
		t.Fatal("Remove kept a map that still names its pack")
	}
	for _, r := range check("after Remove") {
		if r.P == victim {
			t.Fatalf("an object still maps to the removed pack")
		}
	}
	// Lookup switches from searching to the map by itself.
	for range s.entries/64 + 100 {
		s.Lookup(all[0])
	}
	if s.objs.Load() == nil {
		t.Error("many lookups did not build the map")
	}
}

func TestAddRefusesUnsortedEntries(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Add took entries out of order")
		}
	}()
	var s Set
	s.Add(pack("x", [2]byte{2, 0}, [2]byte{1, 0}))
}
