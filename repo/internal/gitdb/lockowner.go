package gitdb

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The owners of lock files. git leaves a lock file its killed process
// made for the user to remove; a chunkvc commit killed while it held
// index.lock (it does through the whole Git commit, as git does) or a
// ref's lock would leave every later commit refused until the user did.
// So chunkvc makes each lock file first under a name of its own in the
// .git directory's chunkvc/lock-owners, a name that says which process
// on which host made it, and only then links it to the lock's name (a
// link fails when the name exists, as an exclusive create does). Every
// lock chunkvc holds therefore has that second name, wherever the
// process is killed: there is no moment when the lock exists and its
// owner is unknown. A later chunkvc removes a lock only when such a name
// is the very same file and names a process that is gone, on this host.
// A lock git made has no second name, and one that replaced chunkvc's
// (same name, another file) is not the same file: both stay, refused as
// before. On a file system without hard links, locks are made as git
// makes them and are not taken over.
//
// Glossary: the owner name of a lock is
// "<lock's path below .git, slashes spelled %>.<host>.<pid>.<nonce>";
// its prefix, record(lock), is also the name of the one-line record
// ("pid host inode") earlier chunkvc versions wrote, still honoured.

// lockOwners keeps the owner names in the .git directory's
// chunkvc/lock-owners.
type lockOwners struct{ gitDir string }

// record is lock's owner-name prefix (and earlier versions' record).
func (o lockOwners) record(lock string) string {
	rel, err := filepath.Rel(o.gitDir, lock)
	if err != nil {
		rel = filepath.Base(lock)
	}
	return filepath.Join(o.gitDir, "chunkvc", "lock-owners", strings.ReplaceAll(filepath.ToSlash(rel), "/", "%"))
}

// owner is one owner name of a lock, parsed.
type owner struct {
	path string
	host string
	pid  int
}

// owners lists the owner names of lock (any process, any host).
func (o lockOwners) owners(lock string) []owner {
	prefix := o.record(lock)
	ents, err := os.ReadDir(filepath.Dir(prefix))
	if err != nil {
		return nil
	}
	base := filepath.Base(prefix) + "."
	var out []owner
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), base)
		if !ok {
			continue
		}
		f := strings.Split(rest, ".")
		if len(f) < 3 {
			continue
		}
		pid, err := strconv.Atoi(f[len(f)-2])
		if err != nil {
			continue
		}
		out = append(out, owner{path: filepath.Join(filepath.Dir(prefix), e.Name()), host: strings.Join(f[:len(f)-2], "."), pid: pid})
	}
	return out
}

// tryLock makes lock exclusively under this process's owner name, then
// links it to lock's name. Without hard links it makes lock as git does.
func (o lockOwners) tryLock(lock string) (*os.File, error) {
	host, _ := os.Hostname()
	name := fmt.Sprintf("%s.%s.%d.%s", o.record(lock), host, os.Getpid(), strconv.FormatInt(time.Now().UnixNano(), 36))
	if os.MkdirAll(filepath.Dir(name), 0o755) != nil || strings.ContainsAny(host, "/\\") {
		return plainLock(lock)
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return plainLock(lock)
	}
	if err := os.Link(name, lock); err != nil {
		f.Close()
		_ = os.Remove(name)
		if errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		return plainLock(lock) // no hard links here
	}
	return f, nil
}

// plainLock makes lock exclusively, as git does: no owner is recorded.
func plainLock(lock string) (*os.File, error) {
	return os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
}

// disown removes this process's owner names of lock once the lock is
// renamed or removed.
func (o lockOwners) disown(lock string) {
	host, _ := os.Hostname()
	for _, w := range o.owners(lock) {
		if w.host == host && w.pid == os.Getpid() {
			_ = os.Remove(w.path)
		}
	}
}

// clearStale removes lock when an owner name that is the same file says
// a chunkvc process that is gone made it, and reports whether lock is
// gone. Owner names of gone processes that are not lock's any more are
// removed on the way.
func (o lockOwners) clearStale(lock string) bool {
	fi, err := os.Lstat(lock)
	if err != nil {
		return errors.Is(err, fs.ErrNotExist) // gone meanwhile: try again
	}
	host, _ := os.Hostname()
	for _, w := range o.owners(lock) {
		if w.host != host || processAlive(w.pid) {
			continue
		}
		wfi, err := os.Lstat(w.path)
		if err != nil {
			continue
		}
		if !os.SameFile(fi, wfi) {
			_ = os.Remove(w.path) // left by a killed chunkvc before its link, or after the rename
			continue
		}
		if os.Remove(lock) != nil {
			return false
		}
		_ = os.Remove(w.path)
		return true
	}
	return o.clearStaleRecord(lock, fi, host)
}

// clearStaleRecord is clearStale for the record earlier versions wrote
// after making the lock: "pid host inode".
func (o lockOwners) clearStaleRecord(lock string, fi fs.FileInfo, host string) bool {
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
	if err := errors.Join(err1, err2); err != nil || f[1] != host || processAlive(pid) {
		return false
	}
	if got, ok := fileIdentity(fi); !ok || got != ino {
		return false
	}
	if os.Remove(lock) != nil {
		return false
	}
	_ = os.Remove(o.record(lock))
	return true
}

// createLock makes lock exclusively, taking over one a killed chunkvc
// left (once, not in a loop), with this process as its owner.
func (o lockOwners) createLock(lock string) (*os.File, error) {
	f, err := o.tryLock(lock)
	if errors.Is(err, fs.ErrExist) && o.clearStale(lock) {
		f, err = o.tryLock(lock)
	}
	return f, err
}
