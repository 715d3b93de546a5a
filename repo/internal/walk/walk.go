// Package walk lists and stats the files of a work tree with several
// folders in flight at once: a tree of thousands of files otherwise waits
// on one directory read or stat call after another (on a network file
// system, one round trip after another).
//
// Contract: Files never follows a symbolic link, never descends into a
// folder (other than the root) that holds a .git entry (a nested
// repository), and returns slash paths relative to the root in byte
// order, exactly what one filepath.WalkDir under the same rules returns.
// Stat answers for every path, in any order, from several goroutines, each
// path's answer once; its errors are the *fs.PathError os.Stat or
// os.Lstat gives.
package walk

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/chunkvc/chunkvc/repo/internal/statcache"
)

// Rules says what Files keeps. Both are called from several goroutines.
type Rules struct {
	// Descend reports whether the folder rel (a slash path) is walked.
	Descend func(rel string) bool
	// Keep reports whether the regular file rel, named name, is listed.
	Keep func(rel, name string) bool
	// Others lists, through Keep too, the entries that are neither folders
	// nor regular files (links, devices, sockets): for a caller that must
	// notice them to refuse them, not skip them.
	Others bool
}

// workers is how many folders Files reads at once.
const workers = 4

// Files walks the tree at root and returns the regular files (and, with
// Rules.Others, other non-folders) that rules keep, sorted. A root that is not a folder holds nothing.
func Files(root string, rules Rules) ([]string, error) {
	if fi, err := os.Lstat(root); err != nil || !fi.IsDir() {
		return nil, err
	}
	w := &treeWalk{root: root, rules: rules}
	w.dirs.Add(1)
	w.queue = append(w.queue, "")
	w.cond = sync.NewCond(&w.mu)
	var wg sync.WaitGroup
	for range workers {
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
	n := 0
	for _, f := range w.found {
		n += len(f)
	}
	out := make([]string, 0, n)
	for _, f := range w.found {
		out = append(out, f...)
	}
	sort.Strings(out)
	return out, nil
}

// treeWalk is one Files: a queue of folders (slash paths from the root,
// "" the root) that workers read, each adding what it finds.
type treeWalk struct {
	root  string
	rules Rules
	dirs  sync.WaitGroup // folders queued and not yet read
	mu    sync.Mutex
	cond  *sync.Cond
	queue []string
	done  bool
	found [][]string // the kept files of each folder read
	err   error
}

// work reads queued folders until every folder is read.
func (w *treeWalk) work() {
	var buf []byte // readDir's, reused
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
			files, subdirs, err := w.readDir(d, &buf)
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

// Stat stats the files paths (slash paths relative to root), several
// folders at once, and gives each answer to set with its index in paths.
// Each folder is opened once and its files stated through it
// (statcache.StatNames). lstat does not follow a final symbolic link.
func Stat(root string, paths []string, lstat bool, set func(i int, fi fs.FileInfo, err error)) {
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
				statcache.StatNames(filepath.Join(root, filepath.FromSlash(b.dir)), names[b.start:b.end], lstat,
					func(k int, fi fs.FileInfo, err error) { set(b.start+k, fi, err) })
			}
		})
	}
	wg.Wait()
}

// statBatch is how many files of one folder a Stat worker takes at a
// time: enough to pay for opening the folder, few enough that a single
// large folder still keeps every worker busy.
const statBatch = 256
