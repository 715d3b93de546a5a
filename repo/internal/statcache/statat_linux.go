package statcache

import (
	"io/fs"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// StatNames stats the entries names of directory dir, giving each answer
// to set with its index in names, through one descriptor of dir: each
// stat then looks up one name, not every folder from /, and the answers
// share one small slice rather than a heap object each. lstat does not
// follow a final symbolic link; dir's own path is followed, as os.Stat
// follows it. An error is the *fs.PathError os.Stat or os.Lstat gives.
func StatNames(dir string, names []string, lstat bool, set func(i int, fi fs.FileInfo, err error)) {
	op, flags := "stat", 0
	if lstat {
		op, flags = "lstat", unix.AT_SYMLINK_NOFOLLOW
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		statEach(dir, names, lstat, set)
		return
	}
	defer func() { _ = unix.Close(fd) }() // read only: nothing to lose
	infos := make([]info, len(names))
	var st unix.Stat_t
	for i, n := range names {
		for {
			err = unix.Fstatat(fd, n, &st, flags)
			if err != unix.EINTR {
				break
			}
		}
		if err != nil {
			set(i, nil, &fs.PathError{Op: op, Path: filepath.Join(dir, n), Err: err})
			continue
		}
		in := &infos[i]
		*in = info{name: n, size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(), ino: st.Ino, nlink: uint64(st.Nlink), mode: st.Mode}
		set(i, in, nil)
	}
}

// info is the fs.FileInfo of a StatNames answer: what the stat cache
// and commit use of a stat. Sys is the *info itself. It is an fs.DirEntry
// too, so that a listing of a million files needs no wrapper for each.
type info struct {
	name               string
	size, mtime, ctime int64
	ino, nlink         uint64
	mode               uint32
}

func (i *info) Name() string       { return i.name }
func (i *info) Size() int64        { return i.size }
func (i *info) ModTime() time.Time { return time.Unix(0, i.mtime) }
func (i *info) IsDir() bool        { return i.Mode().IsDir() }
func (i *info) Sys() any           { return i }
func (i *info) Type() fs.FileMode  { return i.Mode().Type() }

// Info is the entry's FileInfo: itself.
func (i *info) Info() (fs.FileInfo, error) { return i, nil }

// Mode spells the kernel's st_mode as io/fs does.
func (i *info) Mode() fs.FileMode {
	m := fs.FileMode(i.mode & 0o777)
	switch i.mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	}
	for _, b := range [...]struct {
		bit  uint32
		mode fs.FileMode
	}{{unix.S_ISUID, fs.ModeSetuid}, {unix.S_ISGID, fs.ModeSetgid}, {unix.S_ISVTX, fs.ModeSticky}} {
		if i.mode&b.bit != 0 {
			m |= b.mode
		}
	}
	return m
}
