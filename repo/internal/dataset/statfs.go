package dataset

import (
	"io/fs"
	"os"
	"path"
	"slices"
	"sync"

	"github.com/chunkvc/chunkvc/repo/internal/walk"
)

// statFS is the store as zarr.Walk reads it: files opened through the
// os.Root (nothing outside the store is read), folders listed by name and
// their entries lstat'ed several at once (walk.Stat). A folder read through
// an os.Root lstats each entry in turn, which made the walk of a
// 100,000-file store a second of sequential system calls.
type statFS struct {
	root *os.Root
	dir  string // the store's directory, for walk.Stat
}

func (s statFS) Open(name string) (fs.File, error) { return s.root.Open(name) }

// ReadDir lists folder name, sorted by name, each entry with the FileInfo
// of its lstat. A folder of a million chunk files is listed whole: what
// is kept of each entry is its path, its lstat and the entry.
func (s statFS) ReadDir(name string) ([]fs.DirEntry, error) {
	d, err := s.root.Open(name)
	if err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	_ = d.Close() // read-only
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	paths := names
	if name != "." {
		paths = make([]string, len(names))
		for i, n := range names {
			paths[i] = path.Join(name, n)
		}
	}
	out := make([]fs.DirEntry, len(paths))
	// The error of the first entry that has one, as a look in order
	// would find it.
	var mu sync.Mutex
	var first error
	firstAt := len(paths)
	// set is called from several goroutines, each index once.
	walk.Stat(s.dir, paths, true, func(i int, fi fs.FileInfo, err error) {
		if err != nil {
			mu.Lock()
			if i < firstAt {
				first, firstAt = err, i
			}
			mu.Unlock()
			return
		}
		if e, ok := fi.(fs.DirEntry); ok {
			out[i] = e // statcache's answers are entries too: no wrapper each
		} else {
			out[i] = fs.FileInfoToDirEntry(fi)
		}
	})
	if first != nil {
		return nil, first
	}
	return out, nil
}

var _ fs.ReadDirFS = statFS{}
