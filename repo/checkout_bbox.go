package repo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/chunkvc/chunkvc/formats/tiff"
	"github.com/chunkvc/chunkvc/geom"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/boxsel"
	"github.com/chunkvc/chunkvc/repo/internal/confine"
)

// ErrPartial means a command refused a file written by checkout --bbox: it
// holds only part of a committed version and must never be committed.
var ErrPartial = errors.New("partial checkout")

// partialEntry records one file written by checkout --bbox, in
// .git/chunkvc/partial.json.
type partialEntry struct {
	Commit  string     `json:"commit"`
	Digest  hashing.ID `json:"digest"` // the full version's digest
	Layout  hashing.ID `json:"layout"` // the full version's layout
	BBox    geom.BBox  `json:"bbox"`   // in the file's CRS
	Size    int64      `json:"size"`   // bytes written
	Dropped [][2]int64 `json:"dropped"`
}

type partialFile struct {
	mu      sync.Mutex
	t       *confine.Tree           // .git
	Entries map[string]partialEntry `json:"entries"`
}

const partialRel = "chunkvc/partial.json"

func (r *Repo) loadPartial() *partialFile {
	pf := &partialFile{Entries: map[string]partialEntry{}, t: r.gitTree()}
	defer pf.t.Close()
	if data, err := pf.t.ReadFile(partialRel, maxStateFile); err == nil {
		var onDisk partialFile
		if json.Unmarshal(data, &onDisk) == nil && onDisk.Entries != nil {
			pf.Entries = onDisk.Entries
		}
	}
	return pf
}

// maxStateFile bounds what is read of a JSON state file in .git/chunkvc.
const maxStateFile = 256 << 20

func (pf *partialFile) set(p string, e *partialEntry) error {
	pf.mu.Lock()
	defer pf.mu.Unlock()
	if e == nil {
		if _, ok := pf.Entries[p]; !ok {
			return nil
		}
		delete(pf.Entries, p)
	} else {
		pf.Entries[p] = *e
	}
	data, err := json.Marshal(pf)
	if err != nil {
		return err
	}
	defer pf.t.Close()
	return pf.t.WriteFile(partialRel, data, true)
}

// isPartial reports, from pf (loadPartial), whether the work-tree file p
// was written by checkout --bbox (and not since replaced by a full
// checkout). Edits to a partial file do not make it whole: it stays
// partial. A partial file that was deleted is not partial any more.
func (r *Repo) isPartial(pf *partialFile, p string) bool {
	if _, ok := pf.Entries[p]; !ok {
		return false
	}
	ok, _ := exists(r.abs(p))
	return ok
}

// PartialError is the error commit returns for a partial file.
func PartialError(p string) error {
	return fmt.Errorf("%w: %s holds only the tiles of a --bbox checkout; run chunkvc checkout -- %s for the whole file (or delete it) before committing", ErrPartial, p, p)
}

// prefetchBBox reads the chunks of m that meet box (and its layout) through
// the read path, so remote ones land in the read cache. Nothing is written
// to the work tree.
func (r *Repo) prefetchBBox(ctx context.Context, m *manifest.Manifest, box geom.BBox) (AssembleStats, error) {
	cr := r.NewChunkReader(1, 0) // nothing kept in memory
	want, _ := boxsel.Wanted(m, box)
	f, err := cr.OpenFile(ctx, m)
	if err != nil {
		return AssembleStats{}, err
	}
	// One chunk at a time, each read whatever the memory budget.
	for _, pc := range f.Pieces(0, m.Size) {
		if pc.Chunk && want[pc.ID] {
			if _, err := f.Chunk(ctx, pc); err != nil {
				return statsOf(cr), err
			}
		}
	}
	return statsOf(cr), nil
}

func statsOf(cr *ChunkReader) AssembleStats {
	s := cr.Stats()
	return AssembleStats{ChunksLocal: int(s.ChunksLocal), ChunksFetched: int(s.ChunksFetched), BytesFetched: s.BytesFetched}
}

// writePartialTIFF writes a GeoTIFF holding every IFD of m but only the
// tiles (or strips) whose chunks meet box; the others become sparse
// (offset 0, byte count 0, which GDAL reads as nodata) and their bytes are
// left out, every file offset shifted to match. Each chunk written is
// hash-verified; the result cannot be checked against the manifest digest
// (it is not that file), so it is recorded as partial.
func (r *Repo) writePartialTIFF(ctx context.Context, wt *confine.Tree, m *manifest.Manifest, box geom.BBox, commit string) (int64, AssembleStats, error) {
	cr := r.NewChunkReader(0, 0)
	f, err := cr.OpenFile(ctx, m)
	if err != nil {
		return 0, AssembleStats{}, err
	}
	want, _ := boxsel.Wanted(m, box)
	// A block is kept when a wanted chunk overlaps it, or when it is all
	// skeleton (no chunk to leave out).
	keep := func(a, n int64) bool {
		chunks, wanted := 0, false
		for _, pc := range f.Pieces(a, a+n) {
			if pc.Chunk {
				chunks++
				wanted = wanted || want[pc.ID]
			}
		}
		return chunks == 0 || wanted
	}
	plan, err := tiff.PlanSparse(ctxReaderAt{ctx, f}, m.Size, keep)
	if err != nil {
		return 0, AssembleStats{}, fmt.Errorf("%s: --bbox: %w", m.Path, err)
	}

	out, err := wt.Create(m.Path)
	if err != nil {
		return 0, AssembleStats{}, err
	}
	fail := func(err error) (int64, AssembleStats, error) {
		out.Abort()
		return 0, statsOf(cr), err
	}
	var written int64
	const window = 4 << 20
	buf := make([]byte, window)
	for _, span := range plan.Kept(m.Size) {
		for pos := span[0]; pos < span[1]; pos += window {
			n := min(window, span[1]-pos)
			b := buf[:n]
			if _, err := f.ReadAtContext(ctx, b, pos); err != nil && err != io.EOF {
				return fail(err)
			}
			plan.Patch(b, pos)
			if _, err := out.Write(b); err != nil {
				return fail(err)
			}
			written += n
		}
	}
	if err := tiff.CheckSparse(out.File, written); err != nil {
		return fail(fmt.Errorf("%s: --bbox: the rewritten file does not parse (%w); this is a bug", m.Path, err))
	}
	if err := out.Commit(true); err != nil {
		return 0, statsOf(cr), err
	}
	e := &partialEntry{Commit: commit, Digest: m.Digest, Layout: m.Layout, BBox: box, Size: written, Dropped: plan.Dropped()}
	return written, statsOf(cr), r.loadPartial().set(m.Path, e)
}

// ctxReaderAt binds a context to a ReaderAtContext.
type ctxReaderAt struct {
	ctx context.Context
	r   interface {
		ReadAt([]byte, int64) (int, error)
	}
}

func (c ctxReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if f, ok := c.r.(*FileReader); ok {
		return f.ReadAtContext(c.ctx, p, off)
	}
	return c.r.ReadAt(p, off)
}
