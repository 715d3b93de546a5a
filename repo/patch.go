package repo

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/internal/progress"
	"github.com/chunkvc/chunkvc/manifest"
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
	stat   fileStat
	digest hashing.ID
	layout hashing.ID
}

// patchInPlace turns the working file at m.Path, holding version w, into
// m by writing the pieces that differ. done is false, with nothing
// changed, when the file does not lend itself to it (see the limits).
func (r *Repo) patchInPlace(ctx context.Context, m *manifest.Manifest, w working, cache *statCache, prog progress.Counter) (_ AssembleStats, done bool, err error) {
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
	path := r.abs(m.Path)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return st, false, nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || statOf(fi) != w.stat || !fi.Mode().IsRegular() || !singleLink(fi) {
		return st, false, nil // changed meanwhile, or other names share its bytes
	}

	// The undo journal first, durable before the first byte changes.
	var undo []span
	for _, wr := range writes {
		if wr.off >= old.Size {
			continue // beyond the old end: undone by the truncate
		}
		b := make([]byte, min(wr.pc.Len, old.Size-wr.off))
		if _, err := f.ReadAt(b, wr.off); err != nil {
			return st, false, fmt.Errorf("%s: read bytes %d..%d: %w", m.Path, wr.off, wr.off+int64(len(b)), err)
		}
		undo = append(undo, span{wr.off, b})
	}
	if cut > 0 {
		b := make([]byte, cut)
		if _, err := f.ReadAt(b, m.Size); err != nil {
			return st, false, fmt.Errorf("%s: read bytes %d..%d: %w", m.Path, m.Size, old.Size, err)
		}
		undo = append(undo, span{m.Size, b})
	}
	journal, err := r.writeJournal(m.Path, old.Size, undo)
	if err != nil {
		return st, false, err
	}
	// From here on a failure rolls the file back.
	crashed := false
	defer func() {
		if (err != nil || !done) && !crashed {
			if rerr := r.recoverPatch(); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
	}()

	var derived []write
	for i, wr := range writes {
		if err := ctx.Err(); err != nil {
			return st, false, err
		}
		pc := wr.pc
		var data []byte
		switch {
		case pc.Derive != "":
			derived = append(derived, wr)
			continue
		case !pc.Chunk:
			data = pc.Inline
		default:
			b, src, err := r.read.get(ctx, pc.ID)
			if err != nil {
				return st, false, fmt.Errorf("%s: chunk %s: %w", m.Path, pc.ID, err)
			}
			if int64(len(b)) != pc.Len {
				return st, false, fmt.Errorf("%s: chunk %s: %w: %d bytes, layout says %d", m.Path, pc.ID, ErrIntegrity, len(b), pc.Len)
			}
			if src == fromRemote {
				st.ChunksFetched++
				st.BytesFetched += pc.Len
			} else {
				st.ChunksLocal++
			}
			data = b
		}
		if _, err := f.WriteAt(data, wr.off); err != nil {
			return st, false, fmt.Errorf("%s: %w", m.Path, err)
		}
		prog.Add(pc.Len)
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

	// Blocks none of whose pieces changed keep the chaining value the
	// block cache holds for the version the file was; the others are read.
	prints := layoutPrints(lay, m.Size)
	prev := r.loadBlocks(w.digest, old.Size)
	var gen uint32
	var reuse func(int) (hashing.CV, bool)
	if prev != nil {
		gen = prev.gen + 1
		reuse = prev.reuse(prints)
	}
	digest, cvs, err := hashing.SumBlocks(ctx, f, m.Size, reuse)
	if err != nil {
		return st, false, fmt.Errorf("%s: %w", m.Path, err)
	}
	if digest != m.Digest {
		return st, false, nil // rolled back; the caller writes it whole
	}
	if err := f.Sync(); err != nil {
		return st, false, fmt.Errorf("%s: %w", m.Path, err)
	}
	if err := os.Remove(journal); err != nil {
		return st, false, fmt.Errorf("remove %s: %w", journal, err)
	}
	_ = syncDir(filepath.Dir(journal)) // a journal back after a crash only undoes a finished patch
	r.saveBlocks(m.Digest, m.Size, &blockSet{gen: gen, prints: prints, cvs: cvs})
	cache.put(m.Path, cacheEntry{fileStat: settled(f, m.Size), Digest: m.Digest, Layout: m.Layout, Hashed: time.Now().UnixNano()})
	st.InPlace, st.BytesWritten = true, n
	st.ChunksReused = chunkPieces(lay.Pieces) - st.ChunksLocal - st.ChunksFetched // left where they were
	return st, true, nil
}

// write is a piece of the new layout that the file does not hold yet.
type write struct {
	off int64
	pc  manifest.Piece
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
			out = append(out, write{off, pc})
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
	for _, w := range ws {
		b, err := d.Derive(ctx, f, m.Size, formats.Segment{Off: w.off, Len: w.pc.Len, Derive: w.pc.Derive})
		if err != nil {
			return fmt.Errorf("%s: regenerate %s at byte %d: %w", m.Path, w.pc.Derive, w.off, err)
		}
		if int64(len(b)) != w.pc.Len || hashing.Sum(b) != w.pc.ID {
			return fmt.Errorf("%s: %w: regenerated %s at byte %d does not match its recorded hash %s", m.Path, ErrIntegrity, w.pc.Derive, w.off, w.pc.ID)
		}
		if _, err := f.WriteAt(b, w.off); err != nil {
			return fmt.Errorf("%s: %w", m.Path, err)
		}
	}
	return nil
}

// settleMin is the size from which reading a file again (about 1 GB/s)
// costs more than waiting out a 50 ms racy window.
var settleMin int64 = 64 << 20

// settled returns the stat of f, size bytes just written, for the stat
// cache. A large file's is taken once its last write is older than the
// racy window (waiting out a short one), so that the entry is trusted: a
// later write would move the mtime. A small file's, or one on a file
// system with a long window (network), is taken at once and the entry
// stays racily clean: the next status reads the file once.
func settled(f *os.File, size int64) fileStat {
	fi, err := f.Stat()
	if err != nil {
		return fileStat{}
	}
	st := statOf(fi)
	w := fsWindow(filepath.Dir(f.Name()))
	if size < settleMin || w > int64(100*time.Millisecond) {
		return st
	}
	if wait := time.Duration(st.Mtime + w + 1 - time.Now().UnixNano()); wait > 0 {
		time.Sleep(wait)
	}
	if fi, err := f.Stat(); err == nil && statOf(fi) == st {
		return st
	}
	return fileStat{} // written meanwhile: no entry that matches
}

func (r *Repo) journalPath() (string, error) {
	dir, err := r.stateDir()
	return filepath.Join(dir, "patch"), err
}

// writeJournal makes the undo journal of a patch of p durable.
func (r *Repo) writeJournal(p string, oldSize int64, undo []span) (string, error) {
	name, err := r.journalPath()
	if err != nil {
		return "", err
	}
	b := []byte(patchMagic)
	b = binary.AppendUvarint(b, uint64(len(p)))
	b = append(b, p...)
	b = binary.AppendUvarint(b, uint64(oldSize))
	b = binary.AppendUvarint(b, uint64(len(undo)))
	for _, u := range undo {
		b = binary.AppendUvarint(b, uint64(u.off))
		b = binary.AppendUvarint(b, uint64(len(u.data)))
		b = append(b, u.data...)
	}
	sum := hashing.Sum(b)
	b = append(b, sum[:]...)
	if err := writeFileAtomic(name, b); err != nil {
		return "", err
	}
	return name, syncDir(filepath.Dir(name))
}

// decodeJournal parses a journal, checking its checksum.
func decodeJournal(b []byte) (p string, oldSize int64, undo []span, err error) {
	bad := errors.New("damaged patch journal")
	if len(b) < len(patchMagic)+32 || string(b[:len(patchMagic)]) != patchMagic {
		return "", 0, nil, bad
	}
	body := b[:len(b)-32]
	if hashing.Sum(body) != hashing.ID(b[len(b)-32:]) {
		return "", 0, nil, bad
	}
	rest := body[len(patchMagic):]
	next := func() uint64 {
		v, n := binary.Uvarint(rest)
		if n <= 0 {
			err = bad
			return 0
		}
		rest = rest[n:]
		return v
	}
	take := func(n uint64) []byte {
		if err != nil || n > uint64(len(rest)) {
			err = bad
			return nil
		}
		out := rest[:n]
		rest = rest[n:]
		return out
	}
	p = string(take(next()))
	oldSize = int64(next())
	count := next()
	for i := uint64(0); err == nil && i < count; i++ {
		off := next()
		data := take(next())
		undo = append(undo, span{int64(off), data})
	}
	if err == nil && (len(rest) != 0 || oldSize < 0) {
		err = bad
	}
	return p, oldSize, undo, err
}

// recoverPatch undoes a patch that did not finish, if its journal is
// there: the old bytes go back, the old size too, then the journal goes.
func (r *Repo) recoverPatch() error {
	name, err := r.journalPath()
	if err != nil {
		return err
	}
	b, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	p, oldSize, undo, err := decodeJournal(b)
	if err != nil {
		// Only a journal renamed into place is read, and it is synced
		// first: damage means the disk lost it, and there is nothing to
		// undo with.
		return fmt.Errorf("%s: %w; remove it once %s is checked out again", name, err, p)
	}
	if err := r.safeTarget(p); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	f, err := os.OpenFile(r.abs(p), os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return os.Remove(name) // nothing left to undo
	}
	if err != nil {
		return fmt.Errorf("undo the interrupted checkout of %s: %w", p, err)
	}
	defer f.Close()
	for _, u := range undo {
		if _, err := f.WriteAt(u.data, u.off); err != nil {
			return fmt.Errorf("undo the interrupted checkout of %s: %w", p, err)
		}
	}
	if err := f.Truncate(oldSize); err != nil {
		return fmt.Errorf("undo the interrupted checkout of %s: %w", p, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("undo the interrupted checkout of %s: %w", p, err)
	}
	if err := os.Remove(name); err != nil {
		return err
	}
	return syncDir(filepath.Dir(name))
}

// syncDir fsyncs the folder dir, so that a rename or removal in it lasts.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
