package gitdb

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The owners of lock files. git leaves a lock file its killed process
// made for the user to remove; a chunkvc commit killed while it held
// index.lock (it does through the whole Git commit, as git does) or a
// ref's lock would leave every later commit refused until the user did.
// So chunkvc records, for each lock it makes, which process made it and
// which file it is (its inode: not its modification time, which what is
// written into it changes): a later chunkvc removes the lock only when
// the record names a process that is gone, on this host, and the very
// file it made. A lock git made has no record, and one that replaced
// chunkvc's (same name, another file) does not match it: both stay,
// refused as before. A chunkvc killed between making the lock and writing
// the record leaves a lock with no record: the user removes it, as for
// git's.

// lockOwners keeps the records, one file per lock, in the .git
// directory's chunkvc/lock-owners.
type lockOwners struct{ gitDir string }

// record is the path of lock's record: its path below the .git
// directory, slashes spelled %.
func (o lockOwners) record(lock string) string {
	rel, err := filepath.Rel(o.gitDir, lock)
	if err != nil {
		rel = filepath.Base(lock)
	}
	return filepath.Join(o.gitDir, "chunkvc", "lock-owners", strings.ReplaceAll(filepath.ToSlash(rel), "/", "%"))
}

// own records that this process made the lock file f at lock.
func (o lockOwners) own(lock string, f *os.File) {
	fi, err := f.Stat()
	if err != nil {
		return
	}
	ino, ok := fileIdentity(fi)
	if !ok {
		return
	}
	host, _ := os.Hostname()
	p := o.record(lock)
	if os.MkdirAll(filepath.Dir(p), 0o755) != nil {
		return
	}
	// Best effort: without the record, the lock is only not taken over.
	tmp := p + ".tmp"
	if os.WriteFile(tmp, fmt.Appendf(nil, "%d %s %d\n", os.Getpid(), host, ino), 0o644) == nil {
		_ = os.Rename(tmp, p)
	}
}

// disown removes lock's record once the lock is renamed or removed.
func (o lockOwners) disown(lock string) { _ = os.Remove(o.record(lock)) }

// clearStale removes lock when its record says a chunkvc process that is
// gone made it, and reports whether lock is gone.
func (o lockOwners) clearStale(lock string) bool {
	data, err := os.ReadFile(o.record(lock))
	if err != nil {
		return false
	}
	f := strings.Fields(string(data))
	if len(f) != 3 {
		return false
	}
	pid, err1 := strconv.Atoi(f[0])
	ino, err2 := strconv.ParseUint(f[2], 10, 64)
	host, _ := os.Hostname()
	if err := errors.Join(err1, err2); err != nil || f[1] != host || processAlive(pid) {
		return false
	}
	fi, err := os.Lstat(lock)
	if err != nil {
		return errors.Is(err, fs.ErrNotExist) // gone meanwhile: try again
	}
	if got, ok := fileIdentity(fi); !ok || got != ino {
		return false
	}
	if os.Remove(lock) != nil {
		return false
	}
	o.disown(lock)
	return true
}

// createLock makes lock exclusively, taking over one a killed chunkvc
// left (once, not in a loop), and records this process as its maker.
func (o lockOwners) createLock(lock string) (*os.File, error) {
	f, err := os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) && o.clearStale(lock) {
		f, err = os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	}
	if err == nil {
		o.own(lock, f)
	}
	return f, err
}
