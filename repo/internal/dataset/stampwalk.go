package dataset

import (
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/repo/internal/statcache"
	"github.com/chunkvc/chunkvc/repo/internal/walk"
)

// StampOf stats every file under dir, several folders at once
// (repo/internal/walk: getdents, then fstatat through each folder, as
// git's preloaded index stats in parallel). Temporary files of an Update
// are left out. Links and other non-regular files are stamped too (their
// lstat), as Plan.Stamp stamps them: a link added to a committed store
// changes its stamp, so status reads the store and reports what Build
// refuses, instead of calling it clean while commit fails.
func StampOf(dir string) (Stamp, error) {
	files, err := walk.Files(dir, walk.Rules{
		Descend: func(string) bool { return true },
		Keep:    func(_, name string) bool { return !strings.Contains(name, tmpMark) },
		Others:  true,
	})
	if err != nil {
		return Stamp{}, fmt.Errorf("zarr store %s: %w", dir, err)
	}
	type stat struct {
		mode fs.FileMode
		st   statcache.Stat
		err  error
	}
	stats := make([]stat, len(files))
	walk.Stat(dir, files, true, func(i int, fi fs.FileInfo, err error) {
		if err != nil {
			stats[i].err = err
			return
		}
		stats[i] = stat{mode: fi.Mode(), st: statcache.StatOf(fi)}
	})
	order := make([]int, len(files))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return walkCompare(files[a], files[b]) })
	var st Stamp
	d := hashing.New()
	var rec []byte
	for _, i := range order {
		if stats[i].err != nil {
			return Stamp{}, fmt.Errorf("zarr store %s: %w", dir, stats[i].err)
		}
		rec = st.add(d, rec, files[i], stats[i].mode, stats[i].st)
	}
	st.Sum = d.ID()
	return st, nil
}
