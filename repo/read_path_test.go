package repo

import (
	"context"
	"testing"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/mem"
)

// The read cache keeps what was downloaded last and stays within its
// bound, counting as it goes rather than listing itself after each
// download.
func TestReadCacheBound(t *testing.T) {
	r, err := Init(t.TempDir(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	remote := mem.New()
	r.Store = remote
	if err := r.setupReadPath(); err != nil {
		t.Fatal(err)
	}
	const n, size = 40, 10 << 10
	r.read.cacheMax = 10 * size
	ctx := context.Background()
	var ids []hashing.ID
	for i := range n {
		b := randomData(size, int64(i))
		id := hashing.Sum(b)
		if err := remote.Put(ctx, id, b); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for i, id := range ids {
		if _, src, err := r.read.get(ctx, id); err != nil || src != fromRemote {
			t.Fatalf("get %d: %v from %v", i, err, src)
		}
		var held int64
		count := 0
		if err := r.read.cache.List(ctx, func(in store.Info) error { held += in.Size; count++; return nil }); err != nil {
			t.Fatal(err)
		}
		if held > r.read.cacheMax {
			t.Fatalf("after %d downloads the cache holds %d bytes, over its %d", i+1, held, r.read.cacheMax)
		}
		if r.read.cacheUsed != held {
			t.Fatalf("after %d downloads the cache counts %d bytes and holds %d", i+1, r.read.cacheUsed, held)
		}
	}
	if _, src, err := r.read.get(ctx, ids[n-1]); err != nil || src != fromCache {
		t.Errorf("the last download is not in the cache: %v from %v", err, src)
	}
}
