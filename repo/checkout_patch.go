package repo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/internal/progress"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/blockcache"
	"github.com/chunkvc/chunkvc/repo/internal/fileio"
	"github.com/chunkvc/chunkvc/repo/internal/journal"
	"github.com/chunkvc/chunkvc/repo/internal/readpath"
	"github.com/chunkvc/chunkvc/repo/internal/statcache"
)

// A checkout whose target differs from the working file in a few pieces
// at the same offsets (GDAL's update mode, a tile replaced, rows appended)
// patches the file in place: it writes those pieces only, so its cost
// follows the tiles, not the file. It is crash-safe through an undo
// journal, .git/chunkvc/patch, written and synced before the file is
// touched, with the old bytes of every piece to be written and of the tail
// a shorter version cuts off (its byte layout is in package
// repo/internal/journal).
//
// The next command that takes the repository lock finds a journal left by
// a crash and writes the old bytes back: the file is again the version it
// was. The patched file's digest is verified like any checkout's, from the
// blocks it wrote and, for the others, the block cache's chaining values of
// the version it was (whose bytes the stat cache vouches for); a mismatch
// rolls the patch back and the file is written whole instead.

// Patch limits: below inPlaceMin bytes a new file costs little, and more
// than a quarter of the file or maxPatch bytes to write is not "a few
// tiles" (the journal holds their old bytes in memory).
var (
	inPlaceMin int64 = 8 << 20
	maxPatch   int64 = 64 << 20
)

// testHookPatchWrite, when set, runs after each piece is written (i its
// index) and after the file is cut or grown to size (i -1); it may change
// f, and returning true stops the patch there as a crash would: without
// undoing it.
var testHookPatchWrite func(i int, f *os.File) (crash bool)

// working is what the stat cache knows of a working file: its bytes are
// those of the version with this digest and layout.
type working struct {
	stat   statcache.Stat
	digest hashing.ID
	layout hashing.ID
}

// patchInPlace turns the working file at m.Path, holding version w, into
// m by writing the pieces that differ. done is false, with nothing
// changed (or all of it undone), when the file does not lend itself to it
// (see the limits) or a piece cannot be had: the caller then writes the
// file whole.
func (r *Repo) patchInPlace(ctx context.Context, m *manifest.Manifest, w working, cache *statcache.Cache, prog progress.Counter) (_ AssembleStats, done bool, err error) {
	j, err := r.planPatch(ctx, m, w, prog)
	if j == nil || err != nil {
		return AssembleStats{}, false, err
	}
	defer j.f.Close()
	if !j.fetch(ctx) {
		return j.st, false, nil
	}
	if err := j.saveJournal(); err != nil {
		return j.st, false, err
	}
	// From here on a failure puts the old bytes back.
	crashed := false
	defer func() {
		// Bytes that were not the version the stat cache said (the
		// digest told) stay wrong after the undo; the caller's whole
		// write replaces them all the same.
		if (err != nil || !done) && !crashed {
			if rerr := r.recoverPatch(); rerr != nil && !errors.Is(rerr, errNotRestored) {
				err = errors.Join(err, rerr)
			}
		}
	}()
	if crashed, err = j.write(ctx); err != nil {
		return j.st, false, err
	}
	if ok, err := j.verify(ctx); !ok || err != nil {
		return j.st, false, err // undone; the caller writes it whole
	}
	if err := j.finish(); err != nil {
		return j.st, false, err
	}
	j.record(cache)
	return j.st, true, nil
}

// patchJob is one patch in place, a role to a method: planPatch decides
// that the file lends itself to it, fetch gets the new chunks, saveJournal
// makes the undo journal durable, write changes the file, verify checks
// its digest, finish makes it final and record tells the caches.
type patchJob struct {
	r      *Repo
	m      *manifest.Manifest // the version to write
	w      working            // the version the file is
	lay    *manifest.Layout   // m's layout
	old    *manifest.Layout   // w's layout
	f      *os.File           // the working file, open for writing
	writes []write            // the pieces of lay that old lacks
	n      int64              // their bytes
	cut    int64              // the bytes the truncate drops
	prog   progress.Counter

	jpath   string          // the undo journal, once written
	written statcache.Stat  // the file's stat after the last write
	blocks  *blockcache.Set // the block cache's record of m, once verified
	st      AssembleStats
}

// planPatch returns the job that patches the working file at m.Path,
// holding version w, into m; nil when the file does not lend itself to it
// (see the limits) or changed meanwhile.
func (r *Repo) planPatch(ctx context.Context, m *manifest.Manifest, w working, prog progress.Counter) (*patchJob, error) {
	if m.Size < inPlaceMin || w.layout.IsZero() {
		return nil, nil
	}
	lay, err := r.layoutFor(ctx, m)
	if err != nil {
		return nil, err
	}
	old, err := r.loadLayout(ctx, w.layout)
	if err != nil || old.Size != w.stat.Size {
		return nil, nil // not worth failing for: write the file whole
	}
	writes, n := differing(old, lay)
	cut := max(old.Size-m.Size, 0) // bytes the truncate drops: journaled too
	if n+cut > maxPatch || (n+cut)*4 > m.Size {
		return nil, nil
	}
	f := r.openToPatch(m.Path, w.stat)
	if f == nil {
		return nil, nil
	}
	return &patchJob{r: r, m: m, w: w, lay: lay, old: old, f: f, writes: writes, n: n, cut: cut, prog: prog}, nil
}

// fetch reads every new chunk (verified by hash) before the file is
// touched, so that one the stores cannot give leaves the file untouched
// and the caller writes it whole (it may find the chunk elsewhere in the
// working file). It reports whether it had them all.
func (j *patchJob) fetch(ctx context.Context) bool {
	for i, wr := range j.writes {
		if !wr.pc.Chunk {
			continue
		}
		b, src, err := j.r.read.Get(ctx, wr.pc.ID)
		if err != nil || int64(len(b)) != wr.pc.Len {
			return false
		}
		if src == readpath.FromRemote {
			j.st.ChunksFetched++
			j.st.BytesFetched += wr.pc.Len
		} else {
			j.st.ChunksLocal++
		}
		j.writes[i].data = b
	}
	return true
}

// saveJournal makes the undo journal durable before the first byte
// changes: the old bytes of each piece to be written, and of the tail a
// shorter version cuts off.
func (j *patchJob) saveJournal() error {
	m, old, f := j.m, j.old, j.f
	jn := journal.Journal{Path: m.Path, Ino: j.w.stat.Ino, OldSize: old.Size, NewSize: m.Size, Digest: j.w.digest, Layout: j.w.layout}
	for _, wr := range j.writes {
		if wr.off >= old.Size {
			continue // beyond the old end: undone by the truncate
		}
		b := make([]byte, min(wr.pc.Len, old.Size-wr.off))
		if _, err := f.ReadAt(b, wr.off); err != nil {
			return fmt.Errorf("%s: read bytes %d..%d: %w", m.Path, wr.off, wr.off+int64(len(b)), err)
		}
		jn.Spans = append(jn.Spans, journal.Span{Off: wr.off, Data: b})
	}
	if j.cut > 0 {
		b := make([]byte, j.cut)
		if _, err := f.ReadAt(b, m.Size); err != nil {
			return fmt.Errorf("%s: read bytes %d..%d: %w", m.Path, m.Size, old.Size, err)
		}
		jn.Spans = append(jn.Spans, journal.Span{Off: m.Size, Data: b})
	}
	var err error
	j.jpath, err = j.r.writeJournal(&jn)
	return err
}

// write puts the new pieces into the file and cuts or grows it to size,
// then regenerates the derived pieces from them. crashed reports that
// testHookPatchWrite stopped it as a crash would.
func (j *patchJob) write(ctx context.Context) (crashed bool, err error) {
	m, f := j.m, j.f
	var derived []write
	for i, wr := range j.writes {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		data := wr.data
		switch {
		case wr.pc.Derive != "":
			derived = append(derived, wr)
			continue
		case !wr.pc.Chunk:
			data = wr.pc.Inline
		}
		if _, err := f.WriteAt(data, wr.off); err != nil {
			return false, fmt.Errorf("%s: %w", m.Path, err)
		}
		j.prog.Add(wr.pc.Len)
		if testHookPatchWrite != nil && testHookPatchWrite(i, f) {
			return true, errors.New("simulated crash")
		}
	}
	if m.Size != j.old.Size {
		if err := f.Truncate(m.Size); err != nil {
			return false, fmt.Errorf("%s: %w", m.Path, err)
		}
	}
	if testHookPatchWrite != nil && testHookPatchWrite(-1, f) {
		return true, errors.New("simulated crash")
	}
	if err := j.r.deriveInto(ctx, m, f, derived); err != nil {
		return false, err
	}
	fi, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("%s: %w", m.Path, err)
	}
	j.written = statcache.StatOf(fi) // after our last write: a later one moves the mtime
	return false, nil
}

// verify reports whether the patched file has m's digest. The blocks the
// patch wrote are read; the others, whose pieces are those of the version
// the file was, keep the chaining values the block cache holds for it.
// Their bytes are vouched for by the stat cache, as for a commit of an
// unchanged file.
func (j *patchJob) verify(ctx context.Context) (bool, error) {
	m := j.m
	prints := blockcache.LayoutPrints(j.lay, m.Size)
	prev := j.r.loadBlocks(j.w.digest, j.old.Size)
	var gen uint32
	var reuse func(int) (hashing.CV, bool)
	if prev != nil {
		gen = prev.Gen + 1
		reuse = prev.Reuse(prints)
	}
	digest, cvs, err := hashing.SumBlocks(ctx, j.f, m.Size, reuse)
	if err != nil {
		return false, fmt.Errorf("%s: %w", m.Path, err)
	}
	if digest != m.Digest {
		return false, nil
	}
	j.blocks = &blockcache.Set{Gen: gen, Prints: prints, CVs: cvs}
	if prev != nil { // its records name bytes, wherever they are
		j.blocks.KeepQuick(prev)
	}
	return true, nil
}

// finish makes the patch final: the file synced, then the journal removed
// and its removal synced.
func (j *patchJob) finish() error {
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("%s: %w", j.m.Path, err)
	}
	return j.r.finishJournal()
}

// record tells the progress counter, the block cache and the stat cache
// what the finished patch left, and its stats what it did.
func (j *patchJob) record(cache *statcache.Cache) {
	m := j.m
	j.prog.Add(m.Size - j.n)
	j.r.saveBlocks(m.Digest, m.Size, j.blocks)
	now, hashed := statcache.Settled(j.f, j.written, m.Size >= settleMin)
	cache.Put(m.Path, statcache.Entry{Stat: now, Digest: m.Digest, Layout: m.Layout, Hashed: hashed})
	j.st.InPlace, j.st.BytesWritten = true, j.n
	j.st.ChunksReused = chunkPieces(j.lay) - j.st.ChunksLocal - j.st.ChunksFetched // left where they were
}

// write is a piece of the new layout that the file does not hold yet.
type write struct {
	off  int64
	pc   manifest.Piece
	data []byte // a chunk's bytes, once fetched
}

// differing returns the pieces of lay that old does not have at the same
// offset, and their total length. Both are in offset order: one pass over
// each, with no map of old's million pieces.
func differing(old, lay *manifest.Layout) ([]write, int64) {
	var out []write
	var n, off, oldOff int64
	j := 0
	for _, pc := range lay.All() {
		for j < old.Len() && oldOff < off {
			oldOff += old.Piece(j).Len
			j++
		}
		if oldOff != off || j >= old.Len() || !samePiece(old.Piece(j), pc) {
			out = append(out, write{off: off, pc: pc})
			n += pc.Len
		}
		off += pc.Len
	}
	return out, n
}

// chunkPieces counts lay's chunk pieces.
func chunkPieces(lay *manifest.Layout) (n int) {
	for _, p := range lay.All() {
		if p.Chunk {
			n++
		}
	}
	return n
}

func samePiece(a, b manifest.Piece) bool {
	return a.Len == b.Len && a.Chunk == b.Chunk && a.Derive == b.Derive && a.ID == b.ID && bytes.Equal(a.Inline, b.Inline)
}

// deriveInto regenerates the derived pieces ws of m into f, each checked
// against its recorded hash.
func (r *Repo) deriveInto(ctx context.Context, m *manifest.Manifest, f *os.File, ws []write) error {
	if len(ws) == 0 {
		return nil
	}
	d, ok := r.formats.ByName(m.Format).(formats.Deriver)
	if !ok {
		return fmt.Errorf("%s: format %q has derived bytes but this chunkvc cannot regenerate them", m.Path, m.Format)
	}
	mismatch := func(w write) error {
		return fmt.Errorf("%s: %w: regenerated %s at byte %d does not match its recorded hash %s", m.Path, ErrIntegrity, w.pc.Derive, w.off, w.pc.ID)
	}
	for _, w := range ws {
		seg := formats.Segment{Off: w.off, Len: w.pc.Len, Derive: w.pc.Derive}
		if sd, ok := d.(formats.StreamDeriver); ok {
			// Written in place as it is made (the recipe reads none of
			// the segment's bytes), then read back and hashed: no copy of
			// it is held. A failure leaves bytes that the caller undoes
			// (the patch journal) or throws away (a temp file).
			if err := sd.DeriveTo(ctx, f, m.Size, seg, &fileio.SectionWriter{W: f, Off: w.off, N: w.pc.Len}); err != nil {
				return fmt.Errorf("%s: regenerate %s at byte %d: %w", m.Path, w.pc.Derive, w.off, err)
			}
			id, err := hashing.SumReaderAt(ctx, io.NewSectionReader(f, w.off, w.pc.Len), w.pc.Len)
			if err != nil {
				return fmt.Errorf("%s: %w", m.Path, err)
			}
			if id != w.pc.ID {
				return mismatch(w)
			}
			continue
		}
		b, err := d.Derive(ctx, f, m.Size, seg)
		if err != nil {
			return fmt.Errorf("%s: regenerate %s at byte %d: %w", m.Path, w.pc.Derive, w.off, err)
		}
		if int64(len(b)) != w.pc.Len || hashing.Sum(b) != w.pc.ID {
			return mismatch(w)
		}
		if _, err := f.WriteAt(b, w.off); err != nil {
			return fmt.Errorf("%s: %w", m.Path, err)
		}
	}
	return nil
}

// settleMin is the size from which reading a file again (about 1 GB/s)
// costs more than waiting out a 50 ms racy window (statcache.Settled).
var settleMin int64 = 64 << 20
