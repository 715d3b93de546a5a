package dataset

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/chunkvc/chunkvc/hashing"
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

func TestSeenRoundTripAndRules(t *testing.T) {
	st := statcache.Stat{Size: 10, Mtime: 1e9, Ctime: 1e9, Ino: 7}
	s := &Seen{Hashed: 10e9}
	ids := []hashing.ID{hashing.Sum([]byte("a")), hashing.Sum([]byte("b")), hashing.Sum([]byte("c"))}
	s.Add("t2m/0.1", 0, 10, st, ids[0])
	s.Add("t2m/0.0", 4, 6, st, ids[1])
	s.Add("t2m/0.0", 0, 4, st, ids[2])
	s.Add("t2m/0.0", 0, 4, st, ids[2]) // twice: kept once
	data := s.Encode()
	back, err := DecodeSeen(data)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back.Encode(), data) {
		t.Fatal("seen cache does not round-trip")
	}
	if id, ok := back.Lookup("t2m/0.0", 4, 6, st); !ok || id != ids[1] {
		t.Errorf("lookup of a recorded range: %v %v", id, ok)
	}
	for name, q := range map[string]struct {
		p      string
		off, n int64
		st     statcache.Stat
	}{
		"other path":   {"t2m/0.2", 0, 10, st},
		"other offset": {"t2m/0.0", 1, 4, st},
		"other length": {"t2m/0.0", 0, 5, st},
		"touched":      {"t2m/0.1", 0, 10, statcache.Stat{Size: 10, Mtime: 2e9, Ctime: 2e9, Ino: 7}},
		"racy":         {"t2m/0.1", 0, 10, statcache.Stat{Size: 10, Mtime: 1e9, Ctime: 9e9, Ino: 7}},
	} {
		b := &Seen{Hashed: back.Hashed, entries: back.entries}
		if name == "racy" {
			b.entries = nil
			b.Add(q.p, q.off, q.n, q.st, ids[0])
		}
		if _, ok := b.Lookup(q.p, q.off, q.n, q.st); ok {
			t.Errorf("%s: trusted", name)
		}
		if got := b.Recorded(q.p, q.off, q.n, q.st); got != (name == "racy") {
			t.Errorf("%s: recorded %v", name, got)
		}
	}
	for i := range data {
		bad := bytes.Clone(data)
		bad[i] ^= 1
		if _, err := DecodeSeen(bad); err == nil {
			t.Fatalf("byte %d flipped: decoded", i)
		}
	}
	if _, err := DecodeSeen(data[:len(data)-1]); err == nil {
		t.Fatal("truncated: decoded")
	}
	name := filepath.Join(t.TempDir(), "seen", "x")
	if err := SaveSeen(name, back); err != nil {
		t.Fatal(err)
	}
	if got := LoadSeen(name); got == nil || !bytes.Equal(got.Encode(), data) {
		t.Fatal("saved cache does not load")
	}
	if err := os.WriteFile(name, data[:20], 0o644); err != nil {
		t.Fatal(err)
	}
	if LoadSeen(name) != nil {
		t.Fatal("a damaged cache file loads")
	}
}

// FuzzDecodeSeen feeds the decoder bodies with a valid checksum, so that
// it is the body's parsing that is fuzzed: whatever decodes must survive
// an encode and a decode unchanged.
func FuzzDecodeSeen(f *testing.F) {
	s := &Seen{Hashed: 5e9}
	s.Add("a/0.0", 0, 3, statcache.Stat{Size: 3, Mtime: 1, Ctime: 2, Ino: 3}, hashing.Sum([]byte("x")))
	s.Add("a/0.1", 0, 3, statcache.Stat{Size: 3, Mtime: 1, Ctime: 2, Ino: 4}, hashing.Sum([]byte("y")))
	for _, d := range [][]byte{s.Encode(), (&Seen{}).Encode()} {
		f.Add(d[:len(d)-32])
	}
	f.Add([]byte(seenMagic))
	f.Fuzz(func(t *testing.T, body []byte) {
		sum := hashing.Sum(body)
		got, err := DecodeSeen(append(bytes.Clone(body), sum[:]...))
		if err != nil {
			return
		}
		again, err := DecodeSeen(got.Encode())
		if err != nil {
			t.Fatalf("re-encoded cache does not decode: %v", err)
		}
		if again.Hashed != got.Hashed || !slices.Equal(again.entries, got.entries) {
			t.Fatalf("cache changed in a round trip")
		}
	})
}
