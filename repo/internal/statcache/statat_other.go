//go:build !linux

package statcache

import "io/fs"

// StatNames stats the entries names of directory dir, giving each answer
// to set with its index in names: os.Stat's, or os.Lstat's if lstat.
func StatNames(dir string, names []string, lstat bool, set func(i int, fi fs.FileInfo, err error)) {
	statEach(dir, names, lstat, set)
}
