package repo

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/chunkvc/chunkvc/internal/writeback"
	"github.com/chunkvc/chunkvc/repo/internal/confine"
	"github.com/chunkvc/chunkvc/repo/internal/journal"
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

// writeJournal makes the undo journal of a patch durable.
func (r *Repo) writeJournal(j *journal.Journal) (string, error) {
	name, err := r.journalPath()
	if err != nil {
		return "", err
	}
	t := r.gitTree()
	defer t.Close()
	if err := t.WriteFile(journalRel, journal.Encode(j), true); err != nil {
		return "", err
	}
	return name, writeback.SyncDir(filepath.Dir(name))
}

// errNotRestored: undoing a patch did not give back the file's old
// digest; checkout_patch.go matches it with errors.Is.
var errNotRestored = journal.ErrNotRestored

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
	j, err := journal.Decode(b)
	if err != nil {
		// Only a journal synced and renamed into place is read: damage
		// means the disk lost it, and there is nothing to undo with.
		what := "a tracked file"
		if j.Path != "" {
			what = j.Path
		}
		return fmt.Errorf("%s: %w: a checkout that patched %s in place was interrupted, and the file may be half-written; remove %s, then run chunkvc checkout --force -- %s", name, err, what, name, what)
	}
	wt := r.workTree()
	defer wt.Close()
	if err := r.safeTarget(wt, j.Path); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	drop := func() error {
		if err := t.Remove(journalRel); err != nil {
			return err
		}
		return writeback.SyncDir(filepath.Dir(name))
	}
	f, err := wt.OpenFile(j.Path, os.O_RDWR)
	if errors.Is(err, fs.ErrNotExist) {
		return drop() // nothing left to undo
	}
	if err != nil {
		return j.UndoError(name, err)
	}
	defer f.Close()
	return r.undo(f, j, name, drop)
}

// undo puts back the file f of journal j (at name) and drops the journal
// (drop); a file that is again the version it was goes back into the stat
// cache.
func (r *Repo) undo(f *os.File, j *journal.Journal, name string, drop func() error) error {
	restored, hashed, err := j.Undo(f, name, drop)
	if !restored || err != nil {
		return err
	}
	if fi, err := f.Stat(); err == nil {
		cache := r.loadStatCache()
		cache.Put(j.Path, statcache.Entry{Stat: statcache.StatOf(fi), Digest: j.Digest, Layout: j.Layout, Hashed: hashed})
		_ = cache.Save() // a cache: without the entry the file is read once more
	}
	return nil
}
