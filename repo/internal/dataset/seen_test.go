package dataset

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/repo/internal/binrec"
	"github.com/chunkvc/chunkvc/repo/internal/statcache"
)

// Plan.Stamp, from the lstats Build read, is StampOf's: status stamps a
// store with StampOf, commit with the plan, and the stat cache compares
// them. Names that sort differently as paths and as a walk ("a.b" and
// "a/x": '.' < '/' but the walk visits a/ first) must not make them
// differ.
func TestPlanStampIsStampOf(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s.zarr")
	writeSharded(t, dir, false)
	for _, p := range []string{"temp/c.x", "temp.b", "temp-a", "temp/c/0.b", "z", "a b"} {
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(p)), []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, err := Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	want, err := StampOf(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Stamp(); got != want {
		t.Fatalf("plan stamp %+v, StampOf %+v", got, want)
	}
}

// seenFile writes a seen cache of entries (in order) made at hashed and
// returns its name.
func seenFile(t testing.TB, hashed int64, entries []seenEntry) string {
	t.Helper()
	name := filepath.Join(t.TempDir(), "seen", "x")
	if err := WriteSeen(name, hashed, len(entries), func(k int) (SeenKey, hashing.ID) {
		return entries[k].key, entries[k].id
	}); err != nil {
		t.Fatal(err)
	}
	return name
}

type seenEntry struct {
	key SeenKey
	id  hashing.ID
}

// match is MatchSeen of keys (in order) against the cache at name.
func match(name string, keys []SeenKey) ([]SeenMark, []hashing.ID, bool) {
	ids := make([]hashing.ID, len(keys))
	marks, ok := MatchSeen(name, 0, len(keys), func(k int) (int, SeenKey) { return k, keys[k] }, func(i int, id hashing.ID) { ids[i] = id })
	return marks, ids, ok
}

func TestSeenRules(t *testing.T) {
	st := statcache.Stat{Size: 10, Mtime: 1e9, Ctime: 1e9, Ino: 7}
	fresh := statcache.Stat{Size: 10, Mtime: 1e9, Ctime: 9e9, Ino: 7}
	ids := []hashing.ID{hashing.Sum([]byte("a")), hashing.Sum([]byte("b")), hashing.Sum([]byte("c")), hashing.Sum([]byte("d"))}
	name := seenFile(t, 10e9, []seenEntry{
		{SeenKey{"t2m/0.0", 0, 4, st}, ids[2]},
		{SeenKey{"t2m/0.0", 0, 4, st}, ids[2]}, // twice: kept once
		{SeenKey{"t2m/0.0", 4, 6, st}, ids[1]},
		{SeenKey{"t2m/0.1", 0, 10, st}, ids[0]},
		{SeenKey{"t2m/0.3", 0, 10, fresh}, ids[3]},
	})
	keys := []SeenKey{
		{"t2m/0", 0, 4, st},       // before every entry
		{"t2m/0.0", 0, 5, st},     // other length
		{"t2m/0.0", 1, 4, st},     // other offset
		{"t2m/0.0", 4, 6, st},     // trusted
		{"t2m/0.1", 0, 10, st},    // trusted
		{"t2m/0.2", 0, 10, st},    // other path
		{"t2m/0.3", 0, 10, fresh}, // recorded, too recent to trust
		{"t2m/0.4", 0, 10, st},    // after every entry
	}
	marks, got, ok := match(name, keys)
	if !ok {
		t.Fatal("cache not read")
	}
	want := []SeenMark{SeenNone, SeenNone, SeenNone, SeenTrusted, SeenTrusted, SeenNone, SeenRacy, SeenNone}
	if !slices.Equal(marks, want) {
		t.Fatalf("marks %v, want %v", marks, want)
	}
	if got[3] != ids[1] || got[4] != ids[0] {
		t.Errorf("trusted ids %v %v", got[3], got[4])
	}
	touched := st
	touched.Mtime = 2e9
	if marks, _, _ := match(name, []SeenKey{{"t2m/0.1", 0, 10, touched}}); marks[0] != SeenNone {
		t.Errorf("a touched file's entry: %v", marks[0])
	}
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	for i := range data {
		bad := bytes.Clone(data)
		bad[i] ^= 1
		if err := os.WriteFile(name, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, ok := match(name, keys); ok {
			t.Fatalf("byte %d flipped: read", i)
		}
	}
	if err := os.WriteFile(name, data[:len(data)-1], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := match(name, keys); ok {
		t.Fatal("truncated: read")
	}
	if _, _, ok := match(name+"-missing", keys); ok {
		t.Fatal("missing: read")
	}
}

// MatchSeen streams: matching 200,000 entries allocates the marks and a
// read buffer, not the file (12 MB) nor its entries (the decoded cache it
// replaced held about 100 bytes an entry).
func TestMatchSeenStreams(t *testing.T) {
	const n = 200_000
	st := statcache.Stat{Size: 10, Mtime: 1e9, Ctime: 1e9, Ino: 7}
	entries := make([]seenEntry, n)
	for i := range entries {
		entries[i] = seenEntry{SeenKey{Path: fmt.Sprintf("t2m/%06d.0.0", i), Len: 10, Stat: st}, hashing.Sum([]byte{byte(i)})}
	}
	name := seenFile(t, 10e9, entries)
	ids := make([]hashing.ID, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	marks, ok := MatchSeen(name, 0, n, func(k int) (int, SeenKey) { return k, entries[k].key }, func(i int, id hashing.ID) { ids[i] = id })
	runtime.ReadMemStats(&after)
	if !ok {
		t.Fatal("cache not read")
	}
	for i, m := range marks {
		if m != SeenTrusted || ids[i] != entries[i].id {
			t.Fatalf("entry %d: %v", i, m)
		}
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > n+1<<20 {
		t.Errorf("matching %d entries allocated %d bytes, want at most %d", n, got, n+1<<20)
	}
}

// FuzzDecodeSeen feeds the reader bodies with a valid checksum, so that it
// is the body's parsing that is fuzzed: whatever reads must survive an
// encode and a read unchanged.
func FuzzDecodeSeen(f *testing.F) {
	st := statcache.Stat{Size: 3, Mtime: 1, Ctime: 2, Ino: 3}
	for _, es := range [][]seenEntry{nil, {
		{SeenKey{"a/0.0", 0, 3, st}, hashing.Sum([]byte("x"))},
		{SeenKey{"a/0.1", 0, 3, st}, hashing.Sum([]byte("y"))},
	}} {
		var b bytes.Buffer
		if err := encodeSeen(&b, 5e9, len(es), func(k int) (SeenKey, hashing.ID) { return es[k].key, es[k].id }); err != nil {
			f.Fatal(err)
		}
		f.Add(b.Bytes()[:b.Len()-32])
	}
	f.Add([]byte(seenMagic))
	f.Fuzz(func(t *testing.T, body []byte) {
		sum := hashing.Sum(body)
		got, hashed, err := readAll(append(bytes.Clone(body), sum[:]...))
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := encodeSeen(&b, hashed, len(got), func(k int) (SeenKey, hashing.ID) { return got[k].key, got[k].id }); err != nil {
			t.Fatal(err)
		}
		again, hashed2, err := readAll(b.Bytes())
		if err != nil {
			t.Fatalf("re-encoded cache does not read: %v", err)
		}
		if hashed2 != hashed || !slices.Equal(again, got) {
			t.Fatalf("cache changed in a round trip")
		}
	})
}

// readAll reads every entry of a cache's bytes.
func readAll(data []byte) ([]seenEntry, int64, error) {
	var es []seenEntry
	sum := hashing.New()
	sf, ok := binrec.NewSummed(bytes.NewReader(data), int64(len(data)), sum)
	if !ok {
		return nil, 0, errSeen
	}
	hashed, err := readSeen(sf, sum, func(_ int64, e *seenRecord) error {
		es = append(es, seenEntry{SeenKey{string(e.path), e.off, e.len, e.stat}, e.id})
		return nil
	})
	return es, hashed, err
}
