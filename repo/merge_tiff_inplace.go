package repo

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/chunkvc/chunkvc/formats/tiff"
	"github.com/chunkvc/chunkvc/internal/writeback"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/journal"
	"github.com/chunkvc/chunkvc/repo/internal/statcache"
)

// A merged COG is our file with a few tiles spliced in: the bytes before
// the first replaced tile stay where they are but for the offset fields
// of the header, and only those after it move (tiff.Spliced). Written as
// a new file, a merge of two tiles of a 296 MB COG spent 3.5 s mostly
// in the kernel: writing and syncing 296 MB, then freeing the blocks of
// the file it replaced (with the discard mount option, the next fsync
// waited for that too). Spliced in place, it writes the header and the
// tail from the first tile on, behind the undo journal of a checkout
// that patches in place (checkout_patch.go): a crash, or any error
// before the merged file is stored, puts our bytes back.

// maxSpliceTail bounds the bytes a splice in place rewrites (the journal
// holds their old copy in memory); past it, or past half the file, a new
// file is written. A variable for tests.
var maxSpliceTail int64 = 128 << 20

// splicedInPlace is a working file spliced in place: its journal stays
// until done or undo settles it.
type splicedInPlace struct {
	r *Repo
	f *os.File
	// The stat cache's view of the file once written (statcache.Settled):
	// its stat, and when it can be recorded as hashed.
	written statcache.Stat
	settled int64
}

// spliceInPlace turns our working file, open as a, into sp in place; nil
// when the file does not lend itself to it (small, too much to rewrite,
// other names share its bytes, changed meanwhile), nothing changed then.
// After an error the file holds our version again.
func (r *Repo) spliceInPlace(ctx context.Context, ours *manifest.Manifest, a *os.File, sp *tiff.Spliced) (*splicedInPlace, error) {
	h0, h1 := sp.Head()
	tail := sp.Tail()
	n := h1 - h0 + ours.Size - tail
	if ours.Size < inPlaceMin || n > maxSpliceTail || 2*n > ours.Size {
		return nil, nil
	}
	fa, err := a.Stat()
	if err != nil || fa.Size() != ours.Size {
		return nil, nil
	}
	st := statcache.StatOf(fa)
	f := r.openToPatch(ours.Path, st) // a's inode, unchanged since
	if f == nil {
		return nil, nil
	}
	jn := journal.Journal{Path: ours.Path, Ino: st.Ino, OldSize: ours.Size, NewSize: sp.Size(), Digest: ours.Digest, Layout: ours.Layout}
	for _, at := range [][2]int64{{h0, h1}, {tail, ours.Size}} {
		if at[0] == at[1] {
			continue
		}
		b := make([]byte, at[1]-at[0])
		if _, err := f.ReadAt(b, at[0]); err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: read bytes %d..%d: %w", ours.Path, at[0], at[1], err)
		}
		jn.Spans = append(jn.Spans, journal.Span{Off: at[0], Data: b})
	}
	if _, err := r.writeJournal(&jn); err != nil {
		f.Close()
		return nil, err
	}
	s := &splicedInPlace{r: r, f: f}
	if err := s.write(ctx, sp, jn.Spans, ours.Size); err != nil {
		return nil, errors.Join(fmt.Errorf("%s: %w", ours.Path, err), s.undo())
	}
	return s, nil
}

// write makes the splice: the header's fields, then the bytes from the
// first replaced tile on, made from the old ones the journal holds
// (spans: the head's, when there are offset fields before the tail, then
// the tail's). The file is synced.
func (s *splicedInPlace) write(ctx context.Context, sp *tiff.Spliced, spans []journal.Span, size int64) error {
	f, tail := s.f, sp.Tail()
	// Grown first, so that the size is the old or the new one whenever
	// a crash comes, as the undo wants.
	if sp.Size() > size {
		if err := f.Truncate(sp.Size()); err != nil {
			return err
		}
	}
	old := []byte(nil)
	for _, sn := range spans {
		if sn.Off == tail {
			old = sn.Data
			continue
		}
		b := bytes.Clone(sn.Data)
		sp.PatchHead(b, sn.Off)
		if _, err := f.WriteAt(b, sn.Off); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	w := bufio.NewWriterSize(io.NewOffsetWriter(f, tail), 1<<20)
	if _, err := sp.WriteFrom(w, tailReader{bytes.NewReader(old), tail}, tail); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if sp.Size() < size {
		if err := f.Truncate(sp.Size()); err != nil {
			return err
		}
	}
	if err := f.Sync(); err != nil {
		return err
	}
	// Read before its mtime is past the racy window, the merged file
	// would be recorded racily clean, and the post-merge checkout would
	// read it all again: a short wait spares that.
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	s.written, s.settled = statcache.Settled(f, statcache.StatOf(fi), true)
	return nil
}

// hashed is when the stat cache may record ch, the merged file chunked
// from the written file, as hashed.
func (s *splicedInPlace) hashed(ch *chunked) int64 {
	if ch.stat == s.written {
		return max(ch.hashed, s.settled)
	}
	return ch.hashed
}

// done makes the splice final: the journal goes (the file was synced).
func (s *splicedInPlace) done() error {
	defer s.f.Close()
	return s.r.finishJournal()
}

// undo puts our bytes back from the journal, which then goes.
func (s *splicedInPlace) undo() error {
	s.f.Close()
	return s.r.recoverPatch()
}

// openToPatch opens the working file p for a patch in place, if it is
// a regular file of stat want that no other name shares; else nil.
func (r *Repo) openToPatch(p string, want statcache.Stat) *os.File {
	wt := r.workTree()
	f, err := wt.OpenFile(p, os.O_RDWR)
	wt.Close()
	if err != nil {
		return nil
	}
	fi, err := f.Stat()
	if err != nil || statcache.StatOf(fi) != want || !fi.Mode().IsRegular() || !statcache.SingleLink(fi) {
		f.Close()
		return nil // changed meanwhile, or other names share its bytes
	}
	return f
}

// tailReader reads the bytes from off on of a file from r, which holds
// them from its start.
type tailReader struct {
	r   io.ReaderAt
	off int64
}

func (t tailReader) ReadAt(p []byte, off int64) (int, error) {
	if off < t.off {
		return 0, fmt.Errorf("read at %d, before the tail at %d", off, t.off)
	}
	return t.r.ReadAt(p, off-t.off)
}

// finishJournal removes the journal of a finished patch, and syncs its
// removal: else a journal back after a power loss would undo it.
func (r *Repo) finishJournal() error {
	name, err := r.journalPath()
	if err != nil {
		return err
	}
	if err := r.removeJournal(); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", name, err)
	}
	return writeback.SyncDir(filepath.Dir(name))
}
