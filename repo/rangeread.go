package repo

import (
	"context"
	"io"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/chunkread"
	"github.com/chunkvc/chunkvc/repo/internal/readpath"
)

// Random access to stored files (package chunkread), read through this
// repository's read path.

// Defaults for a ChunkReader.
const (
	DefaultChunkMemory  = chunkread.DefaultChunkMemory  // recently used chunks kept in memory
	DefaultDerivedBytes = chunkread.DefaultDerivedBytes // regenerated derived pieces kept in memory
	DefaultFetchLimit   = chunkread.DefaultFetchLimit   // concurrent chunk reads
	// ReadAhead is how far past a read a ReadSeeker fetches, within its
	// window, when a read passes what it fetched before.
	ReadAhead = chunkread.ReadAhead
)

type (
	// ReadStats counts what random-access readers did. Chunks and bytes
	// "fetched" came from the configured store (the remote branch of the
	// read path); "local" ones from the embedded store, alternates or the
	// read cache.
	ReadStats = chunkread.Stats
	// ChunkReader is a verified, memory-bounded source of chunk bytes
	// shared by any number of FileReaders; safe for concurrent use.
	ChunkReader = chunkread.Reader
	// FileReader gives random access to one file version (a manifest)
	// without materialising it.
	FileReader = chunkread.File
	// ReadSeeker is an io.ReadSeeker over a FileReader bound to a context
	// (what http.ServeContent wants).
	ReadSeeker = chunkread.ReadSeeker
)

// CountReads returns a context under which every ChunkReader's reads also
// count into new counters, and a function that reports them so far: the
// stats of one request, where ChunkReader.Stats gives the reader's whole
// life. The function is safe to call at any time, from any goroutine.
func CountReads(ctx context.Context) (context.Context, func() ReadStats) {
	return chunkread.CountReads(ctx)
}

// NewChunkReader returns a ChunkReader of this repository keeping up to
// memBytes of chunks in memory (0 = DefaultChunkMemory) with up to limit
// concurrent reads (0 = DefaultFetchLimit).
func (r *Repo) NewChunkReader(memBytes int64, limit int) *ChunkReader {
	return chunkread.New(chunkSource{r}, memBytes, limit)
}

// chunkSource is the chunkread.Source of a repository: its read path,
// and assembleFile into .git/chunkvc for derived pieces.
type chunkSource struct{ r *Repo }

func (s chunkSource) Get(ctx context.Context, id hashing.ID) ([]byte, bool, error) {
	b, src, err := s.r.read.Get(ctx, id)
	return b, src == readpath.FromRemote, err
}

func (s chunkSource) Assemble(ctx context.Context, m *manifest.Manifest, fn func(io.ReaderAt) error) (chunkread.Counts, error) {
	t := s.r.gitTree()
	defer t.Close()
	tf, err := t.Create("chunkvc/derive")
	if err != nil {
		return chunkread.Counts{}, err
	}
	defer tf.Abort()
	st, err := s.r.assembleFile(ctx, m, tf.File, nil, nil)
	c := chunkread.Counts{ChunksLocal: st.ChunksLocal, ChunksFetched: st.ChunksFetched, BytesFetched: st.BytesFetched}
	if err != nil {
		return c, err
	}
	return c, fn(tf.File)
}
