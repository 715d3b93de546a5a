package repo

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"testing"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
)

// keyedChunks is n chunks keyed "t/<i>" in NaturalLess order, each ID the
// hash of its key.
func keyedChunks(n int) []manifest.Chunk {
	cs := make([]manifest.Chunk, n)
	for i := range cs {
		k := fmt.Sprintf("t/%d", i)
		cs[i] = manifest.Chunk{Key: k, Size: 1, ID: hashing.Sum([]byte(k))}
	}
	return cs
}

// A previous version's chunks are found by key, in order or not, and the
// last chunk under a key wins, as with a map.
func TestKeyFinder(t *testing.T) {
	sorted := keyedChunks(1000)
	shuffled := slices.Clone(sorted)
	for i := range shuffled {
		j := (i * 7919) % len(shuffled)
		shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
	}
	for name, cs := range map[string][]manifest.Chunk{"sorted": sorted, "shuffled": shuffled} {
		find := keyFinder(cs)
		for _, c := range cs {
			if id, ok := find(c.Key); !ok || id != c.ID {
				t.Fatalf("%s: %s: got %v %v", name, c.Key, id.Short(), ok)
			}
		}
		for _, k := range []string{"", "t/", "t/1000", "t/01", "u/1", "s"} {
			if id, ok := find(k); ok {
				t.Errorf("%s: %q found as %s", name, k, id.Short())
			}
		}
	}
	dup := []manifest.Chunk{{Key: "a", ID: hashing.Sum([]byte("1"))}, {Key: "a", ID: hashing.Sum([]byte("2"))}, {Key: "b"}}
	for _, cs := range [][]manifest.Chunk{dup, {dup[2], dup[0], dup[1]}} {
		if id, ok := keyFinder(cs)("a"); !ok || id != dup[1].ID {
			t.Errorf("duplicate key: got %s, want the last, %s", id.Short(), dup[1].ID.Short())
		}
	}
}

// The delta bases of a re-commit of a large file cost no memory by chunk
// when its keys are in order: a map of every key took over 60 bytes one.
func TestLikelyBasesMemory(t *testing.T) {
	const n = 200_000
	old := &manifest.Manifest{Chunks: keyedChunks(n)}
	chunks := slices.Clone(old.Chunks)
	r := &Repo{}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	likes := r.likelyBases(context.Background(), old, chunks, false)
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > n { // under a byte a chunk
		t.Errorf("likelyBases allocated %d bytes for %d chunks", got, n)
	}
	for _, i := range []int{0, 1, n / 2, n - 1} {
		if got := likes(i, 0); got != old.Chunks[i].ID {
			t.Errorf("chunk %d: base %s, want %s", i, got.Short(), old.Chunks[i].ID.Short())
		}
	}
}

// The previous version's chunks and layout are known to the store; other
// IDs are not, nor anything without a previous version.
func TestChunkJobKnown(t *testing.T) {
	old := &manifest.Manifest{Chunks: keyedChunks(100), Layout: hashing.Sum([]byte("layout"))}
	j := &chunkJob{}
	if j.isKnown(old.Chunks[0].ID) {
		t.Error("known without a previous version")
	}
	j.loadPrevious(func() (*manifest.Manifest, error) { return old, nil })
	if err := j.prevG.Wait(); err != nil {
		t.Fatal(err)
	}
	for _, c := range old.Chunks {
		if !j.isKnown(c.ID) {
			t.Fatalf("chunk %s not known", c.Key)
		}
	}
	if !j.isKnown(old.Layout) {
		t.Error("layout not known")
	}
	if j.isKnown(hashing.Sum([]byte("new"))) {
		t.Error("a new chunk is known")
	}
}
