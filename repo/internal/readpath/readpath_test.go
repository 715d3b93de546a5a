package readpath

import (
	"context"
	"errors"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/mem"
)

// The read cache keeps what was downloaded last and stays within its
// bound, counting as it goes rather than listing itself after each
// download.
func TestReadCacheBound(t *testing.T) {
	const n, size = 40, 10 << 10
	remote := mem.New()
	p, err := Open(t.TempDir(), remote, 10*size)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var ids []hashing.ID
	for i := range n {
		b := make([]byte, size)
		rand.New(rand.NewSource(int64(i))).Read(b)
		id := hashing.Sum(b)
		if err := remote.Put(ctx, id, b); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for i, id := range ids {
		if _, src, err := p.Get(ctx, id); err != nil || src != FromRemote {
			t.Fatalf("get %d: %v from %v", i, err, src)
		}
		var held int64
		if err := p.Cache.List(ctx, func(in store.Info) error { held += in.Size; return nil }); err != nil {
			t.Fatal(err)
		}
		if held > p.cacheMax {
			t.Fatalf("after %d downloads the cache holds %d bytes, over its %d", i+1, held, p.cacheMax)
		}
		if p.cacheUsed != held {
			t.Fatalf("after %d downloads the cache counts %d bytes and holds %d", i+1, p.cacheUsed, held)
		}
	}
	if _, src, err := p.Get(ctx, ids[n-1]); err != nil || src != FromCache {
		t.Errorf("the last download is not in the cache: %v from %v", err, src)
	}
	// What the embedded store holds is read from there, not the remote.
	b := []byte("local chunk")
	id := hashing.Sum(b)
	if err := p.Local.Put(ctx, id, b); err != nil {
		t.Fatal(err)
	}
	if got, src, err := p.Get(ctx, id); err != nil || src != FromLocal || string(got) != string(b) {
		t.Errorf("a chunk of the embedded store: %q, %v from %v", got, err, src)
	}
}

// Only absolute paths of existing directories are alternates: a URL, a
// relative path or a missing one is skipped, and nothing is made for it
// (local.Open creates what it opens).
func TestAlternatesOnlyExistingPaths(t *testing.T) {
	gitDir, cwd, other := t.TempDir(), t.TempDir(), t.TempDir()
	t.Chdir(cwd)
	missing := filepath.Join(other, "gone", "store")
	lines := "# alternates\ngs://bucket/prefix\nrel/store\n" + missing + "\n" + other + "\n"
	if err := os.MkdirAll(filepath.Join(gitDir, "chunkvc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(gitDir, "chunkvc", "alternates"), []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Open(gitDir, mem.New(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Alternates) != 1 {
		t.Fatalf("%d alternates; want only %s", len(p.Alternates), other)
	}
	if made, _ := os.ReadDir(cwd); len(made) > 0 {
		t.Fatalf("opening the alternates made %v in the working directory", made)
	}
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a missing alternate was made: %v", err)
	}
}
