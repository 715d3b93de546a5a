package manifest

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/chunkvc/chunkvc/hashing"
)

// The diff of a one-chunk edit of a large manifest (a commit's report of
// a dataset of a million chunks) allocates its key list and an index of
// the old IDs, not a map of every ID: 68 bytes a chunk, where the map
// made it 92.
func TestDiffAllocsPerChunk(t *testing.T) {
	const n = 100_000
	a := &Manifest{Chunks: make([]Chunk, n)}
	for i := range a.Chunks {
		a.Chunks[i] = Chunk{Key: fmt.Sprintf("t/c/%06d", i), Size: 10, ID: hashing.Sum(fmt.Appendf(nil, "%d", i))}
	}
	b := &Manifest{Chunks: append([]Chunk(nil), a.Chunks...)}
	b.Chunks[n/2].ID = hashing.Sum([]byte("edited"))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	d := Diff(a, b)
	runtime.ReadMemStats(&after)
	if d.Changed != 1 || d.Unchanged != n-1 || d.NewBytes != 10 {
		t.Fatalf("diff: %d changed, %d unchanged, %d new bytes", d.Changed, d.Unchanged, d.NewBytes)
	}
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > 72 {
		t.Errorf("diff allocated %d bytes a chunk, want at most 72", per)
	}
}
