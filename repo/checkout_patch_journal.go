package repo

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/internal/writeback"
	"github.com/chunkvc/chunkvc/repo/internal/confine"
	"github.com/chunkvc/chunkvc/repo/internal/statcache"
)

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
	d := &journalDecoder{b: body[len(patchMagic):]}
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

// journalDecoder reads the journal's fields, uvarints and bytes as the
// stat cache encodes them; a short or malformed field sets bad and
// yields zeros.
type journalDecoder struct {
	b   []byte
	bad bool
}

func (d *journalDecoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *journalDecoder) bytes(n uint64) []byte {
	if d.bad || n > uint64(len(d.b)) {
		d.bad = true
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
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
		return j.undoErr(name, err)
	}
	defer f.Close()
	return r.undo(f, j, name, drop)
}

// undo writes back into f, the file of journal j (at name), the bytes
// and size the patch changed, and drops the journal (drop) once it has
// checked them against the digest of the version the file was.
func (r *Repo) undo(f *os.File, j *journal, name string, drop func() error) error {
	undoErr := func(err error) error { return j.undoErr(name, err) }
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

// undoErr is the error of a failed undo of j, whose journal is name.
func (j *journal) undoErr(name string, err error) error {
	return fmt.Errorf("undo the interrupted checkout of %s: %w (the journal is %s)", j.path, err, name)
}
