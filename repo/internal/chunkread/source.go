package chunkread

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/store"
)

// ErrIntegrity means stored data did not match what the manifests record
// (repo re-exports it as repo.ErrIntegrity).
var ErrIntegrity = errors.New("integrity check failed")

// Source is where a Reader gets its bytes: repo's read path.
type Source interface {
	// Get returns the bytes of object id, verified against id, and
	// whether they came from the configured store (remote) rather than a
	// local store or the read cache. It is called from many goroutines
	// at once.
	Get(ctx context.Context, id hashing.ID) (b []byte, remote bool, err error)
	// Assemble writes the whole file m describes to a temporary file,
	// verified against m's digest, calls fn with it on the caller's
	// goroutine, and removes it. fn is not called when assembling fails.
	// The counts say where the chunks came from, also on an error.
	Assemble(ctx context.Context, m *manifest.Manifest, fn func(io.ReaderAt) error) (Counts, error)
}

// Counts says where the chunks of an assembled file came from.
type Counts struct {
	ChunksLocal   int // from a local store or the read cache
	ChunksFetched int // from the configured store
	BytesFetched  int64
}

// CheckLayoutClaim refuses, before anything is read or allocated, a
// layout length that no layout blob has: shorter than an empty file's, or
// longer than a store object can be read (store.MaxObject).
func CheckLayoutClaim(m *manifest.Manifest) error {
	if m.LayoutSize < int64(manifest.MinLayoutSize) || m.LayoutSize > store.MaxObject {
		return fmt.Errorf("%w: the manifest gives layout %s a length of %d bytes, which no layout has", ErrIntegrity, m.Layout, m.LayoutSize)
	}
	return nil
}

// DecodeLayout decodes b, the blob of m's layout (verified by its hash),
// if it is as long as m says: a manifest that misstates it was not written
// by commit.
func DecodeLayout(m *manifest.Manifest, b []byte) (*manifest.Layout, error) {
	if int64(len(b)) != m.LayoutSize {
		return nil, fmt.Errorf("%w: layout %s has %d bytes, the manifest says %d", ErrIntegrity, m.Layout, len(b), m.LayoutSize)
	}
	return manifest.DecodeLayout(b)
}

// Pieces yields the file offset and the piece of every piece of the
// layout overlapping [off, end), in file order.
func (f *File) Pieces(off, end int64) iter.Seq2[int64, manifest.Piece] {
	return func(yield func(int64, manifest.Piece) bool) {
		for i := f.pieceAt(off); i < f.lay.Len() && f.offs[i] < end; i++ {
			if !yield(f.offs[i], f.lay.Piece(i)) {
				return
			}
		}
	}
}

// Chunk returns the verified bytes of chunk piece pc, through the Reader's
// memory; an error names the file and the chunk's key.
func (f *File) Chunk(ctx context.Context, pc manifest.Piece) ([]byte, error) {
	b, err := f.cr.get(ctx, pc.ID, pc.Len)
	if err != nil {
		return nil, f.chunkErr(pc, err)
	}
	return b, nil
}
