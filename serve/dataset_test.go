package serve

import (
	"fmt"
	"testing"
)

// The cache of decoded datasets stays within its bounds: by count, and by
// chunk lines held (a set over the bound alone is kept, alone).
func TestDatasetCacheBounds(t *testing.T) {
	var c datasetCache
	for i := range maxCachedSets + 3 {
		c.put(setKey{fmt.Sprint(i), "d"}, &cachedSet{chunks: 10})
	}
	if len(c.sets) != maxCachedSets || c.get(setKey{"0", "d"}) != nil || c.get(setKey{fmt.Sprint(maxCachedSets + 2), "d"}) == nil {
		t.Fatalf("%d sets kept, want the newest %d", len(c.sets), maxCachedSets)
	}
	c.put(setKey{"big", "d"}, &cachedSet{chunks: maxCachedChunks - 5})
	if len(c.sets) != 1 || c.chunks != maxCachedChunks-5 {
		t.Fatalf("after a big set: %d sets, %d chunks", len(c.sets), c.chunks)
	}
	c.put(setKey{"huge", "d"}, &cachedSet{chunks: 2 * maxCachedChunks})
	if len(c.sets) != 1 || c.get(setKey{"huge", "d"}) == nil || c.chunks != 2*maxCachedChunks {
		t.Fatalf("after a huge set: %d sets, %d chunks", len(c.sets), c.chunks)
	}
}
