package repo

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/confine"
	"github.com/chunkvc/chunkvc/repo/internal/lockfile"
)

// safeTarget checks that the work-tree path p can be written without
// leaving the tree: the path is clean and relative, no parent directory is
// a symlink, and p itself is not a symlink or directory. t is the work
// tree (workTree).
func (r *Repo) safeTarget(t *confine.Tree, p string) error {
	if err := manifest.CheckPath(p); err != nil {
		return err
	}
	if isInternal(p) {
		return fmt.Errorf("path %q is inside .git or .chunkvc", p)
	}
	if err := t.Check(p); err != nil {
		return err
	}
	fi, err := t.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.Mode()&fs.ModeSymlink != 0:
		// Unlike chunkvc's own files, a data file may be the user's link
		// to elsewhere: not replaced, and not written through.
		return confine.Refuse("write", p, "is a symbolic link")
	case !fi.Mode().IsRegular():
		return confine.Refuse("write", p, "exists and is not a regular file")
	}
	return nil
}

// CheckWritable reports whether the work-tree file p may be replaced by
// a file written beside it: every directory on its way is a real one, and
// p is a regular file or missing, not a symbolic link (ErrUnsafePath).
func (r *Repo) CheckWritable(p string) error {
	wt := r.workTree()
	defer wt.Close()
	return r.safeTarget(wt, p)
}

// trackedFiles walks the work tree and returns the slash paths of regular
// files matching a tracked pattern, sorted. Symlinks are never followed.
func (r *Repo) trackedFiles() ([]string, error) {
	var out []string
	err := filepath.WalkDir(r.Root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(r.Root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if d.IsDir() {
			if isInternal(rel) {
				return filepath.SkipDir
			}
			if _, err := os.Lstat(filepath.Join(p, ".git")); err == nil {
				return filepath.SkipDir // a nested repository is not ours
			}
			return nil
		}
		if !d.Type().IsRegular() || strings.Contains(d.Name(), ".chunkvc-tmp-") {
			return nil
		}
		if gitOwned[rel] {
			return nil // Git needs these itself, whatever the patterns say
		}
		if r.Config.IsTracked(rel) {
			out = append(out, rel)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

var gitOwned = map[string]bool{".gitignore": true, ".gitattributes": true, ".gitmodules": true}

// ErrLocked means another chunkvc process holds the repository lock.
var ErrLocked = lockfile.ErrLocked

// lock takes .git/chunkvc/lock (package repo/internal/lockfile), then
// undoes a patch in place that a killed checkout left.
func (r *Repo) lock() (func(), error) {
	const rel = "chunkvc/lock"
	unlock, err := lockfile.Acquire(r.gitTree, rel, filepath.Join(r.gitDir(), filepath.FromSlash(rel)), lockWait())
	if err != nil {
		return nil, err
	}
	// A checkout that patched a file in place and was killed left its
	// undo journal: the file goes back first.
	if err := r.recoverPatch(); err != nil {
		unlock()
		return nil, err
	}
	return unlock, nil
}

// lockWait is how long a command waits for another to release the lock
// (CHUNKVC_LOCK_WAIT, a Go duration; default 30s).
func lockWait() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("CHUNKVC_LOCK_WAIT")); err == nil && d >= 0 {
		return d
	}
	return 30 * time.Second
}

// fileInfo is what statFiles found for one path.
type fileInfo struct {
	fi  fs.FileInfo
	err error
}

// statFiles stats the work-tree files paths, several at once: a tree of
// thousands of files otherwise waits on one stat call after another (on a
// network file system, one round trip after another). lstat does not
// follow a final symbolic link.
func (r *Repo) statFiles(paths []string, lstat bool) []fileInfo {
	out := make([]fileInfo, len(paths))
	stat := os.Stat
	if lstat {
		stat = os.Lstat
	}
	workers := min(8, len(paths)/256+1)
	if workers == 1 {
		for i, p := range paths {
			out[i].fi, out[i].err = stat(r.abs(p))
		}
		return out
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(paths) {
					return
				}
				out[i].fi, out[i].err = stat(r.abs(paths[i]))
			}
		})
	}
	wg.Wait()
	return out
}
