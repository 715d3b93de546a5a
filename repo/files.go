package repo

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/confine"
	"github.com/chunkvc/chunkvc/repo/internal/lockfile"
	"github.com/chunkvc/chunkvc/repo/internal/walk"
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
// files matching a tracked pattern, sorted (repo/internal/walk). Symlinks
// are never followed; .git and .chunkvc at the root, and any folder
// holding a .git (a nested repository is not ours), are skipped.
//
// A tracked dataset's directory is listed as one path, in its place in
// the order, when it is there; the files under it are its members, not
// listed.
func (r *Repo) trackedFiles() ([]string, error) {
	files, err := walk.Files(r.Root, walk.Rules{
		Descend: func(rel string) bool {
			_, in := r.Config.DatasetOf(rel)
			return !isInternal(rel) && !in
		},
		Keep: func(rel, name string) bool {
			// Git needs its own files, whatever the patterns say.
			return !strings.Contains(name, ".chunkvc-tmp-") && !gitOwned[rel] && r.Config.IsTracked(rel)
		},
	})
	if err != nil || len(r.Config.Datasets) == 0 {
		return files, err
	}
	for _, d := range r.Config.Datasets {
		if fi, err := os.Lstat(r.abs(d)); err == nil && fi.IsDir() {
			files = append(files, d)
		}
	}
	sort.Strings(files)
	return files, nil
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

// statFiles stats the work-tree files paths, several folders at once
// (walk.Stat). lstat does not follow a final symbolic link.
func (r *Repo) statFiles(paths []string, lstat bool) []fileInfo {
	out := make([]fileInfo, len(paths))
	walk.Stat(r.Root, paths, lstat, func(i int, fi fs.FileInfo, err error) { out[i] = fileInfo{fi, err} })
	return out
}
