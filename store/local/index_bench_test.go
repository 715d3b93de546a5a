package local_test

import (
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/internal/packidx"
	"github.com/chunkvc/chunkvc/store/local"
)

// BenchmarkIndexes opens a store whose pack index lists n objects (the
// pack itself is sparse) and looks up a few: what a re-commit pays for the
// size of its store. With -benchmem, B/op shows that the index is not
// decoded into memory.
func BenchmarkIndexes(b *testing.B) {
	for _, n := range []int{10_000, 1_000_000} {
		b.Run(fmtCount(n), func(b *testing.B) {
			root := filepath.Join(b.TempDir(), "store")
			if _, err := local.Open(root); err != nil {
				b.Fatal(err)
			}
			ids := fakePack(b, filepath.Join(root, local.PackDir), n)
			b.ResetTimer()
			for b.Loop() {
				s, err := local.Open(root)
				if err != nil {
					b.Fatal(err)
				}
				for k := range 100 {
					id := ids[k*(n/100)]
					if k%2 == 1 {
						id[0] ^= 1 // most likely missing
					}
					if _, err := s.Stat(b.Context(), id); err != nil && !errors.Is(err, store.ErrNotFound) {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

func fmtCount(n int) string {
	if n >= 1_000_000 {
		return "objects=" + itoa(n/1_000_000) + "M"
	}
	return "objects=" + itoa(n/1000) + "k"
}

func itoa(n int) string {
	s := ""
	for ; n > 0 || s == ""; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}

// fakePack writes into dir an index of n raw 40 KB objects and a sparse
// pack file of the size it names, and returns the objects' IDs.
func fakePack(b *testing.B, dir string, n int) []hashing.ID {
	rng := rand.New(rand.NewSource(1))
	ix := packidx.Index{PackSize: packidx.PackHeaderSize}
	for range n {
		var e packidx.Entry
		rng.Read(e.ID[:])
		e.Offset, e.Stored, e.Size = ix.PackSize, 40000, 40000
		ix.PackSize += e.Stored
		ix.Entries = append(ix.Entries, e)
	}
	data, err := packidx.Encode(ix)
	if err != nil {
		b.Fatal(err)
	}
	name := filepath.Join(dir, "pack-"+packidx.Checksum(data).String())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(name+".idx", data, 0o444); err != nil {
		b.Fatal(err)
	}
	f, err := os.Create(name + ".pack")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write([]byte(packidx.PackHeader)); err != nil {
		b.Fatal(err)
	}
	if err := f.Truncate(ix.PackSize); err != nil {
		b.Fatal(err)
	}
	ids := make([]hashing.ID, n)
	for i, e := range ix.Entries {
		ids[i] = e.ID
	}
	return ids
}
