package repo

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/internal/progress"
	"github.com/chunkvc/chunkvc/internal/writeback"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/blockcache"
	"github.com/chunkvc/chunkvc/repo/internal/confine"
	"github.com/chunkvc/chunkvc/repo/internal/statcache"
)

// A checkout whose target differs from the working file in a few pieces
// at the same offsets (GDAL's update mode, a tile replaced, rows appended)
// patches the file in place: it writes those pieces only, so its cost
// follows the tiles, not the file. It is crash-safe through an undo
// journal, .git/chunkvc/patch, written and synced before the file is
// touched, with the old bytes of every piece to be written and of the tail
// a shorter version cuts off:
//
//	"chunkvc-patch 1\n"
//	path          uvarint length, bytes (slash path in the work tree)
//	old size      uvarint
//	ranges        uvarint count; per range: offset uvarint, length uvarint, old bytes
//	BLAKE3 of everything above [32]byte
//
// The next command that takes the repository lock finds a journal left by
// a crash and writes the old bytes back: the file is again the version it
// was. The patched file's digest is verified like any checkout's, from the
// blocks it wrote and, for the others, the block cache's chaining values of
// the version it was (whose bytes the stat cache vouches for); a mismatch
// rolls the patch back and the file is written whole instead.
const patchMagic = "chunkvc-patch 1\n"

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
	var st AssembleStats
	if m.Size < inPlaceMin || w.layout.IsZero() {
		return st, false, nil
	}
	lay, err := r.layoutFor(ctx, m)
	if err != nil {
		return st, false, err
	}
	old, err := r.loadLayout(ctx, w.layout)
	if err != nil || old.Size != w.stat.Size {
		return st, false, nil // not worth failing for: write the file whole
	}
	writes, n := differing(old, lay)
	cut := max(old.Size-m.Size, 0) // bytes the truncate drops: journaled too
	if n+cut > maxPatch || (n+cut)*4 > m.Size {
		return st, false, nil
	}
	wt := r.workTree()
	f, err := wt.OpenFile(m.Path, os.O_RDWR)
	wt.Close()
	if err != nil {
		return st, false, nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || statcache.StatOf(fi) != w.stat || !fi.Mode().IsRegular() || !statcache.SingleLink(fi) {
		return st, false, nil // changed meanwhile, or other names share its bytes
	}

	// Every new chunk first (verified by hash), so that one the stores
	// cannot give leaves the file untouched and the caller writes it whole
	// (it may find the chunk elsewhere in the working file).
	for i, wr := range writes {
		if !wr.pc.Chunk {
			continue
		}
		b, src, err := r.read.get(ctx, wr.pc.ID)
		if err != nil || int64(len(b)) != wr.pc.Len {
			return st, false, nil
		}
		if src == fromRemote {
			st.ChunksFetched++
			st.BytesFetched += wr.pc.Len
		} else {
			st.ChunksLocal++
		}
		writes[i].data = b
	}

	// The undo journal, durable before the first byte changes.
	j := journal{path: m.Path, ino: w.stat.Ino, oldSize: old.Size, newSize: m.Size, digest: w.digest, layout: w.layout}
	for _, wr := range writes {
		if wr.off >= old.Size {
			continue // beyond the old end: undone by the truncate
		}
		b := make([]byte, min(wr.pc.Len, old.Size-wr.off))
		if _, err := f.ReadAt(b, wr.off); err != nil {
			return st, false, fmt.Errorf("%s: read bytes %d..%d: %w", m.Path, wr.off, wr.off+int64(len(b)), err)
		}
		j.undo = append(j.undo, span{wr.off, b})
	}
	if cut > 0 {
		b := make([]byte, cut)
		if _, err := f.ReadAt(b, m.Size); err != nil {
			return st, false, fmt.Errorf("%s: read bytes %d..%d: %w", m.Path, m.Size, old.Size, err)
		}
		j.undo = append(j.undo, span{m.Size, b})
	}
	jpath, err := r.writeJournal(&j)
	if err != nil {
		return st, false, err
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

	var derived []write
	for i, wr := range writes {
		if err := ctx.Err(); err != nil {
			return st, false, err
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
			return st, false, fmt.Errorf("%s: %w", m.Path, err)
		}
		prog.Add(wr.pc.Len)
		if testHookPatchWrite != nil && testHookPatchWrite(i, f) {
			crashed = true
			return st, false, errors.New("simulated crash")
		}
	}
	if m.Size != old.Size {
		if err := f.Truncate(m.Size); err != nil {
			return st, false, fmt.Errorf("%s: %w", m.Path, err)
		}
	}
	if testHookPatchWrite != nil && testHookPatchWrite(-1, f) {
		crashed = true
		return st, false, errors.New("simulated crash")
	}
	if err := r.deriveInto(ctx, m, f, derived); err != nil {
		return st, false, err
	}
	fi, err = f.Stat()
	if err != nil {
		return st, false, fmt.Errorf("%s: %w", m.Path, err)
	}
	written := statcache.StatOf(fi) // after our last write: a later one moves the mtime

	// The digest: the blocks the patch wrote are read; the others, whose
	// pieces are those of the version the file was, keep the chaining
	// values the block cache holds for it. Their bytes are vouched for by
	// the stat cache, as for a commit of an unchanged file.
	prints := blockcache.LayoutPrints(lay, m.Size)
	prev := r.loadBlocks(w.digest, old.Size)
	var gen uint32
	var reuse func(int) (hashing.CV, bool)
	if prev != nil {
		gen = prev.Gen + 1
		reuse = prev.Reuse(prints)
	}
	digest, cvs, err := hashing.SumBlocks(ctx, f, m.Size, reuse)
	if err != nil {
		return st, false, fmt.Errorf("%s: %w", m.Path, err)
	}
	if digest != m.Digest {
		return st, false, nil // undone; the caller writes it whole
	}
	if err := f.Sync(); err != nil {
		return st, false, fmt.Errorf("%s: %w", m.Path, err)
	}
	if err := r.removeJournal(); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return st, false, fmt.Errorf("remove %s: %w", jpath, err)
	}
	// Else a journal back after a power loss would undo a finished patch.
	if err := writeback.SyncDir(filepath.Dir(jpath)); err != nil {
		return st, false, err
	}
	done = true
	prog.Add(m.Size - n)
	bs := &blockcache.Set{Gen: gen, Prints: prints, CVs: cvs}
	if prev != nil { // its records name bytes, wherever they are
		bs.KeepQuick(prev)
	}
	r.saveBlocks(m.Digest, m.Size, bs)
	now, hashed := settled(f, m.Size, written)
	cache.Put(m.Path, statcache.Entry{Stat: now, Digest: m.Digest, Layout: m.Layout, Hashed: hashed})
	st.InPlace, st.BytesWritten = true, n
	st.ChunksReused = chunkPieces(lay.Pieces) - st.ChunksLocal - st.ChunksFetched // left where they were
	return st, true, nil
}

// write is a piece of the new layout that the file does not hold yet.
type write struct {
	off  int64
	pc   manifest.Piece
	data []byte // a chunk's bytes, once fetched
}

type span struct {
	off  int64
	data []byte
}

// differing returns the pieces of lay that old does not have at the same
// offset, and their total length.
func differing(old, lay *manifest.Layout) ([]write, int64) {
	at := make(map[int64]manifest.Piece, len(old.Pieces))
	var off int64
	for _, pc := range old.Pieces {
		at[off] = pc
		off += pc.Len
	}
	var out []write
	var n int64
	off = 0
	for _, pc := range lay.Pieces {
		if o, ok := at[off]; !ok || !samePiece(o, pc) {
			out = append(out, write{off: off, pc: pc})
			n += pc.Len
		}
		off += pc.Len
	}
	return out, n
}

func chunkPieces(ps []manifest.Piece) (n int) {
	for _, p := range ps {
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
			if err := sd.DeriveTo(ctx, f, m.Size, seg, &sectionWriter{f: f, off: w.off, n: w.pc.Len}); err != nil {
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

// sectionWriter writes n bytes of f from off; writes outside them fail.
type sectionWriter struct {
	f      *os.File
	off, n int64
}

func (w *sectionWriter) WriteAt(p []byte, at int64) (int, error) {
	if at < 0 || at > w.n || int64(len(p)) > w.n-at {
		return 0, fmt.Errorf("write of %d bytes at %d is outside the %d-byte segment", len(p), at, w.n)
	}
	return w.f.WriteAt(p, w.off+at)
}

// settleMin is the size from which reading a file again (about 1 GB/s)
// costs more than waiting out a 50 ms racy window.
var settleMin int64 = 64 << 20

// settled returns the stat cache's view of f, size bytes whose last write
// left them with the stat written: the stat, and the time to record as
// hashed. A large file's is taken once that write is older than the racy
// window of its file system (waiting out a short one), so that the entry
// is trusted, a later write moving the mtime; if the stat moved meanwhile
// the entry matches nothing. A small file, or one on a file system with a
// long window (network), gets a racily clean entry: the next status reads
// it once.
//
// Where times move after a stat (multigrain timestamps), nothing is
// waited: written came from a stat after our last write, so a later write
// changes the stat, and the entry is recorded as past the window.
func settled(f *os.File, size int64, written statcache.Stat) (statcache.Stat, int64) {
	dir := filepath.Dir(f.Name())
	w := statcache.FSWindow(dir)
	if statcache.TimesMoveAfterStat(dir) {
		return written, max(time.Now().UnixNano(), written.Mtime+w+1)
	}
	if size < settleMin || w > int64(100*time.Millisecond) {
		return written, written.Mtime // racy: Mtime+window >= Hashed
	}
	if wait := time.Duration(written.Mtime + w + 1 - time.Now().UnixNano()); wait > 0 {
		time.Sleep(wait)
	}
	fi, err := f.Stat()
	if err != nil || statcache.StatOf(fi) != written {
		return statcache.Stat{}, 0
	}
	return written, time.Now().UnixNano()
}

func (r *Repo) journalPath() (string, error) {
	dir, err := r.stateDir()
	return filepath.Join(dir, "patch"), err
}

const journalRel = "chunkvc/patch"

func (r *Repo) removeJournal() error {
	t := r.gitTree()
	defer t.Close()
	return t.Remove(journalRel)
}

// journal is what an interrupted patch needs undone, and what the file
// was before it.
type journal struct {
	path             string
	ino              uint64
	oldSize, newSize int64
	digest, layout   hashing.ID // of the version the file was
	undo             []span
}

// writeJournal makes the undo journal of a patch durable.
func (r *Repo) writeJournal(j *journal) (string, error) {
	name, err := r.journalPath()
	if err != nil {
		return "", err
	}
	t := r.gitTree()
	defer t.Close()
	if err := t.WriteFile(journalRel, encodeJournal(j), true); err != nil {
		return "", err
	}
	return name, writeback.SyncDir(filepath.Dir(name))
}

// encodeJournal returns the bytes of j (layout in the comment on
// patchMagic).
func encodeJournal(j *journal) []byte {
	b := []byte(patchMagic)
	b = binary.AppendUvarint(b, uint64(len(j.path)))
	b = append(b, j.path...)
	b = binary.AppendUvarint(b, j.ino)
	b = binary.AppendUvarint(b, uint64(j.oldSize))
	b = binary.AppendUvarint(b, uint64(j.newSize))
	b = append(b, j.digest[:]...)
	b = append(b, j.layout[:]...)
	b = binary.AppendUvarint(b, uint64(len(j.undo)))
	for _, u := range j.undo {
		b = binary.AppendUvarint(b, uint64(u.off))
		b = binary.AppendUvarint(b, uint64(len(u.data)))
		b = append(b, u.data...)
	}
	sum := hashing.Sum(b)
	return append(b, sum[:]...)
}

// errNotRestored: undoing a patch did not give back the file's old digest.
var errNotRestored = errors.New("undoing it did not give back the version it was")

// decodeJournal parses a journal, checking its checksum. The path is
// returned even when the rest is damaged, if it can be read.
func decodeJournal(b []byte) (*journal, error) {
	bad := errors.New("damaged patch journal")
	if len(b) < len(patchMagic)+32 || string(b[:len(patchMagic)]) != patchMagic {
		return &journal{}, bad
	}
	body := b[:len(b)-32]
	d := &scDecoder{b: body[len(patchMagic):]}
	id := func() (out hashing.ID) {
		copy(out[:], d.bytes(32))
		return out
	}
	j := &journal{}
	j.path = string(d.bytes(d.uvarint()))
	if hashing.Sum(body) != hashing.ID(b[len(b)-32:]) {
		return j, bad
	}
	j.ino = d.uvarint()
	j.oldSize, j.newSize = int64(d.uvarint()), int64(d.uvarint())
	j.digest, j.layout = id(), id()
	count := d.uvarint()
	for i := uint64(0); !d.bad && i < count; i++ {
		off := d.uvarint()
		j.undo = append(j.undo, span{int64(off), d.bytes(d.uvarint())})
	}
	if d.bad || len(d.b) != 0 || j.oldSize < 0 || j.newSize < 0 {
		return j, bad
	}
	return j, nil
}

// hasJournal reports whether a patch journal waits to be undone.
func (r *Repo) hasJournal() bool {
	name, err := r.journalPath()
	if err != nil {
		return false
	}
	_, err = os.Lstat(name)
	return err == nil
}

// settlePatch undoes an interrupted patch before a command that does not
// take the lock (status, diff, fsck) reads the working files.
func (r *Repo) settlePatch() error {
	if !r.hasJournal() {
		return nil
	}
	unlock, err := r.lock() // undoes it
	if err != nil {
		return err
	}
	unlock()
	return nil
}

// recoverPatch undoes a patch that did not finish, if its journal is
// there: the old bytes go back, the old size too, the file is checked
// against the digest of the version it was and the stat cache told so;
// then the journal goes. A file that was replaced since (another inode) is
// left alone; one that was changed otherwise is reported.
func (r *Repo) recoverPatch() error {
	name, err := r.journalPath()
	if err != nil {
		return err
	}
	t := r.gitTree()
	defer t.Close()
	t.RemoveTemps(journalRel) // a journal being written when we died
	b, err := t.ReadFile(journalRel, confine.NoLimit)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	j, err := decodeJournal(b)
	if err != nil {
		// Only a journal synced and renamed into place is read: damage
		// means the disk lost it, and there is nothing to undo with.
		what := "a tracked file"
		if j.path != "" {
			what = j.path
		}
		return fmt.Errorf("%s: %w: a checkout that patched %s in place was interrupted, and the file may be half-written; remove %s, then run chunkvc checkout --force -- %s", name, err, what, name, what)
	}
	wt := r.workTree()
	defer wt.Close()
	if err := r.safeTarget(wt, j.path); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	undoErr := func(err error) error {
		return fmt.Errorf("undo the interrupted checkout of %s: %w (the journal is %s)", j.path, err, name)
	}
	drop := func() error {
		if err := t.Remove(journalRel); err != nil {
			return err
		}
		return writeback.SyncDir(filepath.Dir(name))
	}
	f, err := wt.OpenFile(j.path, os.O_RDWR)
	if errors.Is(err, fs.ErrNotExist) {
		return drop() // nothing left to undo
	}
	if err != nil {
		return undoErr(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return undoErr(err)
	}
	if st := statcache.StatOf(fi); st.Ino != j.ino {
		return drop() // replaced since: not ours to change
	}
	if fi.Size() != j.oldSize && fi.Size() != j.newSize {
		if err := drop(); err != nil {
			return err
		}
		return fmt.Errorf("a checkout that patched %s in place was interrupted, and the file has been changed since; it was left as it is: check it out again (--force) or commit it", j.path)
	}
	for _, u := range j.undo {
		if _, err := f.WriteAt(u.data, u.off); err != nil {
			return undoErr(err)
		}
	}
	if err := f.Truncate(j.oldSize); err != nil {
		return undoErr(err)
	}
	if err := f.Sync(); err != nil {
		return undoErr(err)
	}
	hashed := time.Now().UnixNano()
	digest, err := hashing.SumReaderAt(context.Background(), f, j.oldSize)
	if err != nil {
		return undoErr(err)
	}
	if err := drop(); err != nil {
		return err
	}
	if digest != j.digest {
		return fmt.Errorf("a checkout that patched %s in place was interrupted, and %w (the file was changed meanwhile); check it out again (--force) or commit it", j.path, errNotRestored)
	}
	if fi, err := f.Stat(); err == nil {
		cache := r.loadStatCache()
		cache.Put(j.path, statcache.Entry{Stat: statcache.StatOf(fi), Digest: j.digest, Layout: j.layout, Hashed: hashed})
		_ = cache.Save() // a cache: without the entry the file is read once more
	}
	return nil
}
