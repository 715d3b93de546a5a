package dataset

import (
	"io/fs"
	"os"
	"path"
	"slices"

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
// of its lstat.
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
	paths := make([]string, len(names))
	for i, n := range names {
		paths[i] = path.Join(name, n)
	}
	out := make([]fs.DirEntry, len(names))
	errs := make([]error, len(names))
	// set is called from several goroutines, each index once.
	walk.Stat(s.dir, paths, true, func(i int, fi fs.FileInfo, err error) {
		if err != nil {
			errs[i] = err
			return
		}
		out[i] = fs.FileInfoToDirEntry(fi)
	})
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

var _ fs.ReadDirFS = statFS{}
