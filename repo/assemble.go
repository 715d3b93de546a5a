package repo

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/store"
)

// AssembleStats says where a file's bytes came from.
type AssembleStats struct {
	ChunksReused  int   `json:"chunks_reused"`  // read from the working file
	ChunksFetched int   `json:"chunks_fetched"` // read from the store
	BytesFetched  int64 `json:"bytes_fetched"`
}

// reuse is a working file whose chunks can be read instead of fetched.
type reuse struct {
	f    *os.File
	offs map[hashing.ID]int64
}

// reuseFrom indexes the chunks of the working file at p when its layout is
// known (it is byte-identical to something committed or checked out).
func (r *Repo) reuseFrom(ctx context.Context, p string, layoutID hashing.ID) *reuse {
	if layoutID.IsZero() {
		return nil
	}
	lay, err := r.loadLayout(ctx, layoutID)
	if err != nil {
		return nil
	}
	f, err := os.Open(r.abs(p))
	if err != nil {
		return nil
	}
	ru := &reuse{f: f, offs: map[hashing.ID]int64{}}
	var off int64
	for _, pc := range lay.Pieces {
		if pc.Chunk {
			ru.offs[pc.ID] = off
		}
		off += pc.Len
	}
	return ru
}

func (ru *reuse) close() {
	if ru != nil {
		ru.f.Close()
	}
}

// read returns the chunk from the working file if it is there and intact.
func (ru *reuse) read(id hashing.ID, n int64, buf []byte) ([]byte, bool) {
	if ru == nil {
		return nil, false
	}
	off, ok := ru.offs[id]
	if !ok {
		return nil, false
	}
	if int64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := ru.f.ReadAt(buf, off); err != nil || hashing.Sum(buf) != id {
		return nil, false
	}
	return buf, true
}

func (r *Repo) loadLayout(ctx context.Context, id hashing.ID) (*manifest.Layout, error) {
	b, err := store.ReadAll(ctx, r.Store, id)
	if err != nil {
		return nil, fmt.Errorf("layout %s: %w", id, err)
	}
	return manifest.DecodeLayout(b)
}

// assemble writes the bytes of m to w: inline bytes from the layout blob,
// chunks from ru when it has them intact, else from the store. Every chunk
// is verified by hash, and the whole output against the file digest; on
// any mismatch an error wrapping ErrIntegrity is returned (w then holds a
// wrong prefix, so callers write to a temp file).
func (r *Repo) assemble(ctx context.Context, m *manifest.Manifest, w io.Writer, ru *reuse) (AssembleStats, error) {
	var st AssembleStats
	lay, err := r.loadLayout(ctx, m.Layout)
	if err != nil {
		return st, fmt.Errorf("%s: %w", m.Path, err)
	}
	if lay.Size != m.Size {
		return st, fmt.Errorf("%s: %w: layout describes %d bytes, manifest %d", m.Path, ErrIntegrity, lay.Size, m.Size)
	}
	keyOf := make(map[hashing.ID]string, len(m.Chunks))
	for _, c := range m.Chunks {
		if _, ok := keyOf[c.ID]; !ok {
			keyOf[c.ID] = c.Key
		}
	}
	d := hashing.New()
	out := io.MultiWriter(w, d)
	var buf []byte
	for _, pc := range lay.Pieces {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		if !pc.Chunk {
			if _, err := out.Write(pc.Inline); err != nil {
				return st, err
			}
			continue
		}
		key, ok := keyOf[pc.ID]
		if !ok {
			return st, fmt.Errorf("%s: %w: layout names chunk %s, which the manifest does not list", m.Path, ErrIntegrity, pc.ID)
		}
		data, ok := ru.read(pc.ID, pc.Len, buf)
		if ok {
			st.ChunksReused++
			buf = data
		} else {
			data, err = store.ReadAll(ctx, r.Store, pc.ID)
			if err != nil {
				return st, fmt.Errorf("%s: chunk %s (%s): %w", m.Path, key, pc.ID, err)
			}
			if int64(len(data)) != pc.Len {
				return st, fmt.Errorf("%s: chunk %s (%s): %w: %d bytes, layout says %d", m.Path, key, pc.ID, ErrIntegrity, len(data), pc.Len)
			}
			st.ChunksFetched++
			st.BytesFetched += pc.Len
		}
		if _, err := out.Write(data); err != nil {
			return st, err
		}
	}
	if got := d.ID(); got != m.Digest {
		return st, fmt.Errorf("%s: %w: assembled bytes hash to %s, manifest says %s", m.Path, ErrIntegrity, got, m.Digest)
	}
	return st, nil
}
