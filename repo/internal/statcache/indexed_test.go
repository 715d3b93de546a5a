package statcache

import (
	"bytes"
	"encoding/binary"
	"maps"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/repo/internal/confine"
)

// A cache LoadIndexed reads answers every question as the one Load reads,
// before and after Put and Drop, saves the same file, and a damaged file
// is no cache to it either.
func TestLoadIndexedIsLoad(t *testing.T) {
	root := t.TempDir()
	state := filepath.Join(root, ".git", "chunkvc")
	if err := os.MkdirAll(state, 0o755); err != nil {
		t.Fatal(err)
	}
	git := confine.New(filepath.Join(root, ".git"), ".git")
	rng := rand.New(rand.NewSource(4))
	want := randomEntries(rng, 300)
	if err := (&Cache{Entries: want, t: git}).Save(); err != nil {
		t.Fatal(err)
	}
	eager, lazy := Load(git, root), LoadIndexed(git, root)
	if lazy.idx == nil || len(lazy.Entries) != 0 {
		t.Fatal("LoadIndexed decoded the cache into a map")
	}
	paths := make([]string, 0, len(want))
	for p := range want {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	same := func(when string) {
		t.Helper()
		// In path order (found where the last one ended), then in an
		// order of their own (searched for).
		shuffled := slices.Clone(paths)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		for _, p := range slices.Concat(paths, []string{"not/there", ""}, shuffled) {
			st := want[p].Stat
			e1, ok1 := eager.Lookup(p, st)
			e2, ok2 := lazy.Lookup(p, st)
			l1, lok1 := eager.LayoutOf(p, st)
			l2, lok2 := lazy.LayoutOf(p, st)
			a1, aok1 := eager.Last(p)
			a2, aok2 := lazy.Last(p)
			if ok1 != ok2 || e1 != e2 || lok1 != lok2 || l1 != l2 || aok1 != aok2 || a1 != a2 || eager.IsLazy(p) != lazy.IsLazy(p) {
				t.Fatalf("%s: %s: indexed cache answers %v %v / %v, Load's %v %v / %v", when, p, e2, ok2, a2, e1, ok1, a1)
			}
		}
	}
	same("as loaded")
	for i, p := range paths[:40] {
		if i%2 == 0 {
			eager.Drop(p)
			lazy.Drop(p)
			continue
		}
		e := want[paths[len(paths)-1-i]]
		eager.Put(p, e)
		lazy.Put(p, e)
	}
	// New paths: before the first, between two, after the last.
	for _, p := range []string{"", paths[100] + "\x00", "\xff"} {
		eager.Put(p, want[paths[7]])
		lazy.Put(p, want[paths[7]])
	}
	eager.Drop(paths[len(paths)-1])
	lazy.Drop(paths[len(paths)-1])
	eager.Drop(paths[1]) // put, then dropped
	lazy.Drop(paths[1])
	eager.Put(paths[2], want[paths[3]]) // dropped, then put
	lazy.Put(paths[2], want[paths[3]])
	same("after Put and Drop")
	if err := lazy.Save(); err != nil {
		t.Fatal(err)
	}
	if got := Load(git, root).Entries; !reflect.DeepEqual(got, eager.Entries) {
		t.Fatalf("indexed cache saved %d entries, Load's cache holds %d", len(got), len(eager.Entries))
	}
	// The merged file is the one encode writes, byte for byte; so is
	// one saved with nothing changed.
	for _, c := range []*Cache{eager, LoadIndexed(git, root)} {
		data, err := os.ReadFile(filepath.Join(state, "statcache"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, encode(c.all())) {
			t.Fatal("indexed cache saved other bytes than encode writes")
		}
		if err := LoadIndexed(git, root).Save(); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range [][]byte{[]byte("chunkvc-statcache 1\ngarbage"), nil} {
		data, err := os.ReadFile(filepath.Join(state, "statcache"))
		if err != nil {
			t.Fatal(err)
		}
		if bad == nil {
			data[len(statCacheMagic)+3] ^= 1 // checksum fails
			bad = data
		}
		if err := os.WriteFile(filepath.Join(state, "statcache"), bad, 0o644); err != nil {
			t.Fatal(err)
		}
		if c := LoadIndexed(git, root); c.idx != nil || len(c.Entries) != 0 {
			t.Errorf("a damaged cache gave entries")
		}
	}
}

// A file whose entries are not in path order (encode never writes one) is
// read whole: its entries are found all the same.
func TestLoadIndexedUnsorted(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".git", "chunkvc"), 0o755); err != nil {
		t.Fatal(err)
	}
	git := confine.New(filepath.Join(root, ".git"), ".git")
	want := randomEntries(rand.New(rand.NewSource(7)), 50)
	paths := slices.Sorted(maps.Keys(want))
	slices.Reverse(paths)
	b := binary.AppendUvarint([]byte(statCacheMagic), uint64(len(paths)))
	for _, p := range paths {
		b = appendEntry(b, p, want[p])
	}
	sum := hashing.Sum(b)
	if err := os.WriteFile(filepath.Join(root, ".git", "chunkvc", "statcache"), append(b, sum[:]...), 0o644); err != nil {
		t.Fatal(err)
	}
	c := LoadIndexed(git, root)
	for _, p := range slices.Concat(paths, slices.Sorted(maps.Keys(want))) {
		if e, ok := c.Last(p); !ok || e != want[p] {
			t.Fatalf("%s: %v %v, want %v", p, e, ok, want[p])
		}
	}
}

// What a cache hands out stays readable once the cache is gone, and with
// it the mapping of its file.
func TestLoadIndexedOutlived(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".git", "chunkvc"), 0o755); err != nil {
		t.Fatal(err)
	}
	git := confine.New(filepath.Join(root, ".git"), ".git")
	want := randomEntries(rand.New(rand.NewSource(8)), 20)
	if err := (&Cache{Entries: want, t: git}).Save(); err != nil {
		t.Fatal(err)
	}
	got := map[string]Entry{}
	func() {
		c := LoadIndexed(git, root)
		for p := range want {
			got[p], _ = c.Last(p)
		}
	}()
	for range 5 {
		runtime.GC() // runs the cleanup that unmaps the file
		time.Sleep(10 * time.Millisecond)
	}
	for p, e := range want {
		if got[p].Manifest != e.Manifest || got[p] != e {
			t.Fatalf("%s: %v, want %v", p, got[p], e)
		}
	}
}

// TestSaveNotBuiltWhole: Save writes the cache file as it encodes it, a
// Load'ed cache's or an indexed one's, rather than building the file
// whole in fresh memory (a page fault per 4 KiB), and the file is the one
// encode returns.
func TestSaveNotBuiltWhole(t *testing.T) {
	root := t.TempDir()
	state := filepath.Join(root, ".git", "chunkvc")
	if err := os.MkdirAll(state, 0o755); err != nil {
		t.Fatal(err)
	}
	git := confine.New(filepath.Join(root, ".git"), ".git")
	want := randomEntries(rand.New(rand.NewSource(5)), 20000)
	size := len(encode(want))
	allocated := func(f func() error) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if err := f(); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	loaded := &Cache{Entries: want, t: git}
	paths := slices.Sorted(maps.Keys(want))
	for _, c := range []func() *Cache{func() *Cache { return loaded }, func() *Cache {
		c := LoadIndexed(git, root)
		c.Put(paths[7], want[paths[8]])
		want[paths[7]] = want[paths[8]]
		return c
	}} {
		c := c()
		// The map's sorted paths are the allocation a Load'ed cache needs.
		if n := allocated(c.Save); n > uint64(size/4) {
			t.Fatalf("Save of a %d-byte cache allocated %d bytes", size, n)
		}
		data, err := os.ReadFile(filepath.Join(state, "statcache"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, encode(want)) {
			t.Fatal("Save wrote other bytes than encode returns")
		}
	}
}
