package walk

import (
	"bytes"
	"encoding/binary"
	"io/fs"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
)

// readDir returns the kept files and the folders to walk of folder d. Its
// entries are read with getdents into *buf (the worker's, grown once) and
// parsed in place: no DirEntry, name and path string per file (3 MB of
// fresh memory for 20,000 files, each page a fault), but the paths of a
// folder's files in one string.
func (w *treeWalk) readDir(d string, buf *[]byte) (files, subdirs []string, err error) {
	dir := filepath.Join(w.root, filepath.FromSlash(d))
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	for err == unix.EINTR {
		fd, err = unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	defer func() { _ = unix.Close(fd) }() // read only: nothing to lose
	if *buf == nil {
		*buf = make([]byte, direntBuf)
	}
	prefix := ""
	if d != "" {
		prefix = d + "/"
	}
	var names []byte // prefix and name of each regular file, back to back
	var ends []int
	for {
		n, err := unix.Getdents(fd, *buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, nil, &fs.PathError{Op: "readdirent", Path: dir, Err: err}
		}
		if n <= 0 {
			break
		}
		// A name is shorter than its entry: enough room for every name
		// read, whatever the prefix, without growing twice.
		names = slices.Grow(names, n+n/direntName*len(prefix))
		for b := (*buf)[:n]; len(b) > 0; {
			// struct linux_dirent64: ino 8, off 8, reclen 2, type 1, name
			// NUL-terminated and padded to reclen.
			if len(b) < direntName {
				return nil, nil, &fs.PathError{Op: "readdirent", Path: dir, Err: unix.EIO}
			}
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen <= direntName || reclen > len(b) {
				return nil, nil, &fs.PathError{Op: "readdirent", Path: dir, Err: unix.EIO}
			}
			typ, name := b[18], b[direntName:reclen]
			b = b[reclen:]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			switch string(name) {
			case ".", "..":
				continue
			case ".git":
				if d != "" {
					return nil, nil, nil // a nested repository is not ours
				}
			}
			if typ == unix.DT_UNKNOWN {
				typ = typeOf(fd, name)
			}
			switch typ {
			case unix.DT_DIR:
				if rel := prefix + string(name); w.rules.Descend(rel) {
					subdirs = append(subdirs, rel)
				}
			case unix.DT_REG:
				names = append(append(names, prefix...), name...)
				ends = append(ends, len(names))
			}
		}
	}
	all, start := string(names), 0
	for _, end := range ends {
		if rel := all[start:end]; w.rules.Keep(rel, rel[len(prefix):]) {
			files = append(files, rel)
		}
		start = end
	}
	return files, subdirs, nil
}

// typeOf returns the dirent type of name in folder fd, from lstat, for a
// file system that does not give it in the folder's entries.
func typeOf(fd int, name []byte) byte {
	var st unix.Stat_t
	if unix.Fstatat(fd, string(name), &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return unix.DT_UNKNOWN
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return unix.DT_DIR
	case unix.S_IFREG:
		return unix.DT_REG
	}
	return unix.DT_UNKNOWN
}

const (
	// direntName is where a linux_dirent64's name begins.
	direntName = 19
	// direntBuf is the getdents buffer: a folder of some hundred files
	// in one call.
	direntBuf = 32 << 10
)
