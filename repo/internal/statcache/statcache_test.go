package statcache

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/repo/internal/confine"
)

func randomEntries(rng *rand.Rand, n int) map[string]Entry {
	out := map[string]Entry{}
	for i := range n {
		e := Entry{Stat: Stat{Size: rng.Int63(), Mtime: rng.Int63() - rng.Int63(), Ctime: rng.Int63(), Ino: rng.Uint64()},
			Hashed: rng.Int63()}
		rng.Read(e.Digest[:])
		if rng.Intn(2) == 0 {
			rng.Read(e.Layout[:])
		}
		if rng.Intn(2) == 0 {
			e.Manifest = hashing.Sum([]byte{byte(i)}).String()[:40]
		}
		e.Lazy = rng.Intn(5) == 0
		out[filepath.ToSlash(filepath.Join("dir", string(rune('a'+i%26)), "f"+string(rune('0'+i%10))+".bin"))+string(rune('α'+i))] = e
	}
	return out
}

func TestStatCacheRoundTripAndDamage(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, n := range []int{0, 1, 300} {
		want := randomEntries(rng, n)
		b := encode(want)
		got, err := decode(b)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%d entries: decoded %d, %v", n, len(got), err)
		}
		if n == 0 {
			continue
		}
		for range 200 {
			bad := append([]byte(nil), b...)
			bad[rng.Intn(len(bad))] ^= byte(1 + rng.Intn(255))
			if _, err := decode(bad); err == nil {
				t.Fatal("a damaged cache decoded")
			}
		}
		for _, cut := range []int{1, 32, len(b) / 2, len(b) - 1} {
			if _, err := decode(b[:len(b)-cut]); err == nil {
				t.Fatalf("a cache cut by %d bytes decoded", cut)
			}
		}
	}
}

func TestStatCacheRacyEntriesNotTrusted(t *testing.T) {
	c := &Cache{Entries: map[string]Entry{}}
	now := time.Now().UnixNano()
	st := Stat{Size: 10, Mtime: now - int64(time.Second), Ctime: now, Ino: 7}
	c.Put("racy", Entry{Stat: st, Digest: hashing.Sum([]byte("x")), Hashed: now})
	if _, ok := c.Lookup("racy", st); ok {
		t.Fatal("entry hashed within the racy window of its mtime was trusted")
	}
	old := st
	old.Mtime = now - int64(time.Minute)
	c.Put("old", Entry{Stat: old, Hashed: now})
	if _, ok := c.Lookup("old", old); !ok {
		t.Fatal("settled entry not trusted")
	}
	changed := old
	changed.Ctime++
	if _, ok := c.Lookup("old", changed); ok {
		t.Fatal("entry trusted although ctime changed")
	}
	// On a file system with fine timestamps the window is short.
	fine := &Cache{Entries: map[string]Entry{}, window: int64(50 * time.Millisecond)}
	recent := st
	recent.Mtime = now - int64(200*time.Millisecond)
	fine.Put("recent", Entry{Stat: recent, Hashed: now})
	if _, ok := fine.Lookup("recent", recent); !ok {
		t.Fatal("entry settled beyond a 50 ms window not trusted")
	}
	if w := FSWindow(t.TempDir()); w != racyWindow && w != int64(50*time.Millisecond) {
		t.Fatalf("FSWindow = %v", time.Duration(w))
	}
}

// TestStatCacheMigratesJSON: the JSON cache of earlier versions is read
// when there is no binary one, and saving replaces it.
func TestStatCacheMigratesJSON(t *testing.T) {
	root := t.TempDir()
	state := filepath.Join(root, ".git", "chunkvc")
	if err := os.MkdirAll(state, 0o755); err != nil {
		t.Fatal(err)
	}
	want := randomEntries(rand.New(rand.NewSource(2)), 20)
	old, err := json.Marshal(&Cache{Entries: want})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "statcache.json"), old, 0o644); err != nil {
		t.Fatal(err)
	}
	git := confine.New(filepath.Join(root, ".git"), ".git")
	c := Load(git, root)
	if !reflect.DeepEqual(c.Entries, want) {
		t.Fatalf("JSON cache read as %d entries, want %d", len(c.Entries), len(want))
	}
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(state, "statcache.json")); err == nil {
		t.Error("the JSON cache is still there after saving")
	}
	if got := Load(git, root).Entries; !reflect.DeepEqual(got, want) {
		t.Errorf("binary cache read back as %d entries, want %d", len(got), len(want))
	}
	// A damaged cache is no cache: every file is simply read again.
	if err := os.WriteFile(filepath.Join(state, "statcache"), []byte("chunkvc-statcache 1\ngarbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := Load(git, root).Entries; len(got) != 0 {
		t.Errorf("a damaged cache gave %d entries", len(got))
	}
}

// goldenEntries are the entries of testdata/statcache-v1, which the
// binary of commit 5b1e54c wrote (before the cache left package repo).
func goldenEntries() map[string]Entry {
	return map[string]Entry{
		"a.tif":         {Stat: Stat{Size: 5 << 20, Mtime: 1764000000123456789, Ctime: 1764000000223456789, Ino: 4242}, Digest: hashing.Sum([]byte("a")), Layout: hashing.Sum([]byte("la")), Hashed: 1764000003000000000, Manifest: "0123456789abcdef0123456789abcdef01234567"},
		"sub/b.parquet": {Stat: Stat{Size: 77, Mtime: -5, Ctime: 0, Ino: 0}, Digest: hashing.Sum([]byte("b")), Hashed: 9},
		"lazy/c.fgb":    {Lazy: true},
		"dé/ü.tif":      {Stat: Stat{Size: 1, Mtime: 2, Ctime: 3, Ino: 1 << 63}, Digest: hashing.Sum([]byte("d")), Manifest: "fedcba9876543210fedcba9876543210fedcba98", Lazy: true, Hashed: -1},
	}
}

// TestStatCacheGolden: a cache written by an earlier binary is read, and
// the same entries encode to the same bytes.
func TestStatCacheGolden(t *testing.T) {
	old, err := os.ReadFile(filepath.Join("testdata", "statcache-v1"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := decode(old)
	if err != nil || !reflect.DeepEqual(got, goldenEntries()) {
		t.Fatalf("old cache decoded as %v, %v", got, err)
	}
	if !bytes.Equal(encode(goldenEntries()), old) {
		t.Fatal("the same entries encode to other bytes than the old binary wrote")
	}
}

// FuzzDecodeStatCache: decoding never panics, and what decodes encodes
// to a cache that decodes to the same entries, and to the same bytes
// again. Unless raw, the input is a body whose checksum is appended, so
// that mutations reach the parser.
func FuzzDecodeStatCache(f *testing.F) {
	seeds := [][]byte{
		encode(randomEntries(rand.New(rand.NewSource(3)), 3)),
		encode(map[string]Entry{}),
		encode(map[string]Entry{"lazy.tif": {Lazy: true}}),
	}
	if old, err := os.ReadFile(filepath.Join("testdata", "statcache-v1")); err == nil {
		seeds = append(seeds, old)
	}
	for _, s := range seeds {
		f.Add(s[:len(s)-idLen], false)
		f.Add(s, true)
	}
	f.Add([]byte(statCacheMagic), true)
	f.Fuzz(func(t *testing.T, b []byte, raw bool) {
		if !raw {
			sum := hashing.Sum(b)
			b = append(b[:len(b):len(b)], sum[:]...)
		}
		m, err := decode(b)
		if err != nil {
			return
		}
		enc := encode(m)
		again, err := decode(enc)
		if err != nil || !reflect.DeepEqual(again, m) {
			t.Fatalf("re-encoded cache decodes to %d entries, %v", len(again), err)
		}
		if !bytes.Equal(encode(again), enc) {
			t.Fatal("encoding is not stable")
		}
	})
}
