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

// The owner of index.lock. git leaves a lock file its killed process made
// for the user to remove; a chunkvc commit killed while it held
// index.lock (it does through the whole Git commit, as git does) would
// leave every later commit refused until the user did. So chunkvc records
// beside the lock which process made it, and which file it is (its inode:
// not its modification time, which the index written into it changes): a
// later chunkvc removes the lock only when that
// record names a process that is gone, on this host, and the very file it
// made. A lock git made has no record, and one that replaced chunkvc's
// (same name, another file) does not match it: both stay, refused as
// before. A chunkvc killed between making the lock and writing the record
// leaves a lock with no record: the user removes it, as for git's.

// indexLockOwner is the record's path.
func (g *Repo) indexLockOwner() string { return filepath.Join(g.gitDir, "chunkvc", "index-lock-owner") }

// ownIndexLock records that this process made the lock file f.
func (g *Repo) ownIndexLock(f *os.File) {
	fi, err := f.Stat()
	if err != nil {
		return
	}
	ino, ok := fileIdentity(fi)
	if !ok {
		return
	}
	host, _ := os.Hostname()
	rec := fmt.Sprintf("%d %s %d\n", os.Getpid(), host, ino)
	p := g.indexLockOwner()
	if os.MkdirAll(filepath.Dir(p), 0o755) != nil {
		return
	}
	// Best effort: without the record, the lock is only not taken over.
	tmp := p + ".tmp"
	if os.WriteFile(tmp, []byte(rec), 0o644) == nil {
		_ = os.Rename(tmp, p)
	}
}

// disownIndexLock removes the record once the lock is renamed or removed.
func (g *Repo) disownIndexLock() { _ = os.Remove(g.indexLockOwner()) }

// clearStaleIndexLock removes lock when the record says a chunkvc process
// that is gone made it, and reports whether it did.
func (g *Repo) clearStaleIndexLock(lock string) bool {
	data, err := os.ReadFile(g.indexLockOwner())
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
	g.disownIndexLock()
	return true
}
