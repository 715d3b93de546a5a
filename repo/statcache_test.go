package repo

import (
	"encoding/json"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/chunkvc/chunkvc/hashing"
)

func randomEntries(rng *rand.Rand, n int) map[string]cacheEntry {
	out := map[string]cacheEntry{}
	for i := range n {
		e := cacheEntry{fileStat: fileStat{Size: rng.Int63(), Mtime: rng.Int63() - rng.Int63(), Ctime: rng.Int63(), Ino: rng.Uint64()},
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
		b := encodeStatCache(want)
		got, err := decodeStatCache(b)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%d entries: decoded %d, %v", n, len(got), err)
		}
		if n == 0 {
			continue
		}
		for range 200 {
			bad := append([]byte(nil), b...)
			bad[rng.Intn(len(bad))] ^= byte(1 + rng.Intn(255))
			if _, err := decodeStatCache(bad); err == nil {
				t.Fatal("a damaged cache decoded")
			}
		}
		for _, cut := range []int{1, 32, len(b) / 2, len(b) - 1} {
			if _, err := decodeStatCache(b[:len(b)-cut]); err == nil {
				t.Fatalf("a cache cut by %d bytes decoded", cut)
			}
		}
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
	old, err := json.Marshal(&statCache{Entries: want})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "statcache.json"), old, 0o644); err != nil {
		t.Fatal(err)
	}
	r := &Repo{Root: root}
	c := r.loadStatCache()
	if !reflect.DeepEqual(c.Entries, want) {
		t.Fatalf("JSON cache read as %d entries, want %d", len(c.Entries), len(want))
	}
	if err := c.save(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(state, "statcache.json")); err == nil {
		t.Error("the JSON cache is still there after saving")
	}
	if got := r.loadStatCache().Entries; !reflect.DeepEqual(got, want) {
		t.Errorf("binary cache read back as %d entries, want %d", len(got), len(want))
	}
	// A damaged cache is no cache: every file is simply read again.
	if err := os.WriteFile(filepath.Join(state, "statcache"), []byte("chunkvc-statcache 1\ngarbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := r.loadStatCache().Entries; len(got) != 0 {
		t.Errorf("a damaged cache gave %d entries", len(got))
	}
}

func FuzzDecodeStatCache(f *testing.F) {
	f.Add(encodeStatCache(randomEntries(rand.New(rand.NewSource(3)), 3)))
	f.Add([]byte(statCacheMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeStatCache(b)
		if err != nil {
			return
		}
		if again, err := decodeStatCache(encodeStatCache(m)); err != nil || !reflect.DeepEqual(again, m) {
			t.Fatalf("re-encoded cache decodes to %d entries, %v", len(again), err)
		}
	})
}
