package journal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/repo/internal/statcache"
)

// ErrNotRestored: undoing a patch did not give back the file's old digest.
var ErrNotRestored = errors.New("undoing it did not give back the version it was")

// Undo writes back into f, the file of journal j (at name), the bytes and
// size the patch changed, and drops the journal (drop) once it has
// checked them against the digest of the version the file was. restored
// reports that f holds that version again, hashed (Unix nanoseconds)
// when its digest was taken; a file replaced since is left alone, not
// restored, and its journal dropped.
func (j *Journal) Undo(f *os.File, name string, drop func() error) (restored bool, hashed int64, err error) {
	undoErr := func(err error) (bool, int64, error) { return false, 0, j.UndoError(name, err) }
	fi, err := f.Stat()
	if err != nil {
		return undoErr(err)
	}
	if st := statcache.StatOf(fi); st.Ino != j.Ino {
		return false, 0, drop() // replaced since: not ours to change
	}
	if fi.Size() != j.OldSize && fi.Size() != j.NewSize {
		if err := drop(); err != nil {
			return false, 0, err
		}
		return false, 0, fmt.Errorf("a checkout that patched %s in place was interrupted, and the file has been changed since; it was left as it is: check it out again (--force) or commit it", j.Path)
	}
	for _, u := range j.Spans {
		if _, err := f.WriteAt(u.Data, u.Off); err != nil {
			return undoErr(err)
		}
	}
	if err := f.Truncate(j.OldSize); err != nil {
		return undoErr(err)
	}
	if err := f.Sync(); err != nil {
		return undoErr(err)
	}
	hashed = time.Now().UnixNano()
	digest, err := hashing.SumReaderAt(context.Background(), f, j.OldSize)
	if err != nil {
		return undoErr(err)
	}
	if err := drop(); err != nil {
		return false, 0, err
	}
	if digest != j.Digest {
		return false, 0, fmt.Errorf("a checkout that patched %s in place was interrupted, and %w (the file was changed meanwhile); check it out again (--force) or commit it", j.Path, ErrNotRestored)
	}
	return true, hashed, nil
}

// UndoError is the error of a failed undo of j, whose journal is name.
func (j *Journal) UndoError(name string, err error) error {
	return fmt.Errorf("undo the interrupted checkout of %s: %w (the journal is %s)", j.Path, err, name)
}
