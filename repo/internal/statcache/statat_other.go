//go:build !linux

package statcache

import (
	"io/fs"
	"os"
	"path/filepath"
)

// StatNames stats the entries names of directory dir, giving each answer
// to set with its index in names: os.Stat's, or os.Lstat's if lstat.
func StatNames(dir string, names []string, lstat bool, set func(i int, fi fs.FileInfo, err error)) {
	stat := os.Stat
	if lstat {
		stat = os.Lstat
	}
	for i, n := range names {
		fi, err := stat(filepath.Join(dir, n))
		set(i, fi, err)
	}
}
