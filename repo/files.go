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
	"github.com/chunkvc/chunkvc/repo/internal/statcache"
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
// files matching a tracked pattern, sorted. Symlinks are never followed;
// .git and .chunkvc at the root, and any folder holding a .git (a nested
// repository is not ours), are skipped. Folders are read several at once.
func (r *Repo) trackedFiles() ([]string, error) {
	if fi, err := os.Lstat(r.Root); err != nil || !fi.IsDir() {
		return nil, err // as filepath.WalkDir: a root that is no folder holds nothing
	}
	w := &treeWalk{r: r}
	w.dirs.Add(1)
	w.queue = append(w.queue, "")
	w.cond = sync.NewCond(&w.mu)
	var wg sync.WaitGroup
	for range walkWorkers {
		wg.Go(w.work)
	}
	w.dirs.Wait()
	w.mu.Lock()
	w.done = true
	w.cond.Broadcast()
	w.mu.Unlock()
	wg.Wait()
	if w.err != nil {
		return nil, w.err
	}
	var out []string
	for _, f := range w.found {
		out = append(out, f...)
	}
	sort.Strings(out)
	return out, nil
}

// walkWorkers is how many folders trackedFiles reads at once.
const walkWorkers = 4

// treeWalk is one trackedFiles: a queue of folders (slash paths from the
// root, "" the root) that workers read, each adding what it finds.
type treeWalk struct {
	r     *Repo
	dirs  sync.WaitGroup // folders queued and not yet read
	mu    sync.Mutex
	cond  *sync.Cond
	queue []string
	done  bool
	found [][]string // the tracked files of each folder read
	err   error
}

// work reads queued folders until every folder is read.
func (w *treeWalk) work() {
	for {
		w.mu.Lock()
		for len(w.queue) == 0 && !w.done {
			w.cond.Wait()
		}
		if len(w.queue) == 0 {
			w.mu.Unlock()
			return
		}
		d := w.queue[len(w.queue)-1]
		w.queue = w.queue[:len(w.queue)-1]
		failed := w.err != nil
		w.mu.Unlock()
		if !failed {
			files, subdirs, err := w.readDir(d)
			w.mu.Lock()
			if err != nil && w.err == nil {
				w.err = err
			}
			if len(files) > 0 {
				w.found = append(w.found, files)
			}
			w.dirs.Add(len(subdirs))
			w.queue = append(w.queue, subdirs...)
			w.cond.Broadcast()
			w.mu.Unlock()
		}
		w.dirs.Done()
	}
}

// readDir returns the tracked files and the folders to walk of folder d.
func (w *treeWalk) readDir(d string) (files, subdirs []string, err error) {
	f, err := os.Open(filepath.Join(w.r.Root, filepath.FromSlash(d)))
	if err != nil {
		return nil, nil, err
	}
	entries, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return nil, nil, err
	}
	prefix := ""
	if d != "" {
		prefix = d + "/"
		for _, e := range entries {
			if e.Name() == ".git" {
				return nil, nil, nil // a nested repository is not ours
			}
		}
	}
	for _, e := range entries {
		rel := prefix + e.Name()
		switch t := e.Type(); {
		case t.IsDir():
			if !isInternal(rel) {
				subdirs = append(subdirs, rel)
			}
		case !t.IsRegular(), strings.Contains(e.Name(), ".chunkvc-tmp-"):
		case gitOwned[rel]: // Git needs these itself, whatever the patterns say
		case w.r.Config.IsTracked(rel):
			files = append(files, rel)
		}
	}
	return files, subdirs, nil
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

// statFiles stats the work-tree files paths, several folders at once: a
// tree of thousands of files otherwise waits on one stat call after
// another (on a network file system, one round trip after another). Each
// folder is opened once and its files stated through it (statcache.
// StatNames). lstat does not follow a final symbolic link.
func (r *Repo) statFiles(paths []string, lstat bool) []fileInfo {
	// Batches of paths in one folder, at most statBatch long: paths in
	// path order put a folder's files side by side.
	type batch struct {
		dir        string
		start, end int
	}
	var batches []batch
	names := make([]string, len(paths))
	for i, p := range paths {
		dir, name := ".", p
		if k := strings.LastIndexByte(p, '/'); k >= 0 {
			dir, name = p[:k], p[k+1:]
		}
		names[i] = name
		if n := len(batches); n == 0 || batches[n-1].dir != dir || i-batches[n-1].start >= statBatch {
			batches = append(batches, batch{dir, i, i})
		}
		batches[len(batches)-1].end = i + 1
	}
	out := make([]fileInfo, len(paths))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(8, len(batches)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(batches) {
					return
				}
				b := batches[i]
				statcache.StatNames(r.abs(b.dir), names[b.start:b.end], lstat, func(k int, fi fs.FileInfo, err error) {
					out[b.start+k] = fileInfo{fi, err}
				})
			}
		})
	}
	wg.Wait()
	return out
}

// statBatch is how many files of one folder a statFiles worker takes at
// a time: enough to pay for opening the folder, few enough that a single
// large folder still keeps every worker busy.
const statBatch = 256
