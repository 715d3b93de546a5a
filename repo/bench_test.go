package repo

import (
	"context"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/chunkvc/chunkvc/store/mem"
)

// The pipelines as go test -bench measures them: a change to the commit or
// checkout path can be compared with benchstat without scripts/bench.sh.
// Files are generic (content-defined chunks), so the figures are the
// pipeline's own, not an adapter's.

const benchFileSize = 32 << 20

// benchRepo is a repository tracking *.bin with one committed file of
// benchFileSize random bytes, on the embedded local store or, with mem,
// on an in-memory store.
func benchRepo(b *testing.B, memStore bool) (*Repo, []byte) {
	b.Helper()
	b.Setenv("GIT_AUTHOR_NAME", "Bench")
	b.Setenv("GIT_AUTHOR_EMAIL", "bench@example.com")
	dir := b.TempDir()
	r, err := Init(dir, "", nil)
	if err != nil {
		b.Fatal(err)
	}
	if memStore {
		r.Store = mem.New()
		if err := r.setupReadPath(); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := r.Track([]string{"*.bin"}); err != nil {
		b.Fatal(err)
	}
	data := make([]byte, benchFileSize)
	rand.New(rand.NewSource(1)).Read(data)
	if err := os.WriteFile(filepath.Join(dir, "a.bin"), data, 0o644); err != nil {
		b.Fatal(err)
	}
	return r, data
}

func stores(b *testing.B, fn func(b *testing.B, memStore bool)) {
	b.Run("local", func(b *testing.B) { fn(b, false) })
	b.Run("mem", func(b *testing.B) { fn(b, true) })
}

// BenchmarkCommit is the first commit of a new file: chunk, hash, store,
// verify, git commit.
func BenchmarkCommit(b *testing.B) {
	stores(b, func(b *testing.B, memStore bool) {
		b.SetBytes(benchFileSize)
		for b.Loop() {
			b.StopTimer()
			r, _ := benchRepo(b, memStore)
			b.StartTimer()
			if _, err := r.Commit(context.Background(), CommitOptions{Message: "v1"}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRecommit is a commit after a few bytes of the file changed:
// the whole file is read and hashed, one chunk is new.
func BenchmarkRecommit(b *testing.B) {
	stores(b, func(b *testing.B, memStore bool) {
		r, data := benchRepo(b, memStore)
		ctx := context.Background()
		if _, err := r.Commit(ctx, CommitOptions{Message: "v1"}); err != nil {
			b.Fatal(err)
		}
		name := filepath.Join(r.Root, "a.bin")
		b.SetBytes(benchFileSize)
		i := 0
		for b.Loop() {
			b.StopTimer()
			i++
			data[(i*7919)%len(data)]++
			if err := os.WriteFile(name, data, 0o644); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if _, err := r.Commit(ctx, CommitOptions{Message: "edit"}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCheckout writes the file of the first commit again after it
// was removed: every chunk read from the store, verified and written.
func BenchmarkCheckout(b *testing.B) {
	stores(b, func(b *testing.B, memStore bool) {
		r, _ := benchRepo(b, memStore)
		ctx := context.Background()
		if _, err := r.Commit(ctx, CommitOptions{Message: "v1"}); err != nil {
			b.Fatal(err)
		}
		name := filepath.Join(r.Root, "a.bin")
		b.SetBytes(benchFileSize)
		for b.Loop() {
			b.StopTimer()
			if err := os.Remove(name); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if _, err := r.Checkout(ctx, CheckoutOptions{Force: true}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
