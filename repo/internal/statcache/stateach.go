package statcache

import (
	"io/fs"
	"os"
	"path/filepath"
)

// statEach is StatNames one path at a time: on systems without a
// per-folder stat, and on Linux when dir cannot be opened. Each file gets
// os.Stat's (os.Lstat's if lstat) own answer.
func statEach(dir string, names []string, lstat bool, set func(int, fs.FileInfo, error)) {
	stat := os.Stat
	if lstat {
		stat = os.Lstat
	}
	for i, n := range names {
		fi, err := stat(filepath.Join(dir, n))
		set(i, fi, err)
	}
}
