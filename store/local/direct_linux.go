package local

import (
	"os"

	"golang.org/x/sys/unix"
)

// setDirect turns O_DIRECT on or off for f. File systems without it (tmpfs,
// some FUSE and network ones) refuse with EINVAL.
func setDirect(f *os.File, on bool) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
		if err != nil {
			serr = err
			return
		}
		if on {
			fl |= unix.O_DIRECT
		} else {
			fl &^= unix.O_DIRECT
		}
		_, serr = unix.FcntlInt(fd, unix.F_SETFL, fl)
	}); err != nil {
		return err
	}
	return serr
}

// mapSegment returns n bytes of anonymous memory, page-aligned as O_DIRECT
// needs, outside the Go heap: a commit's segments do not raise its GC goal.
func mapSegment(n int) ([]byte, error) {
	return unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
}

func unmapSegment(b []byte) { _ = unix.Munmap(b[:cap(b)]) }

// localDiskFS reports whether dir is on ext4, XFS, Btrfs or F2FS.
func localDiskFS(dir string) bool {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return false
	}
	switch uint32(st.Type) {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.F2FS_SUPER_MAGIC:
		return true
	}
	return false
}

// mapFile maps the n bytes of f read-only. unmap must be called when they
// are no longer used.
func mapFile(f *os.File, n int) (b []byte, unmap func(), err error) {
	b, err = unix.Mmap(int(f.Fd()), 0, n, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	// Lookups probe an index here and there: a probe that mapped a whole
	// huge page of the page cache (2 MiB) would count it all in the
	// process's memory.
	_ = unix.Madvise(b, unix.MADV_NOHUGEPAGE)
	_ = unix.Madvise(b, unix.MADV_RANDOM)
	return b, func() { _ = unix.Munmap(b) }, nil
}

// releaseMapped lets go of the pages of a file mapping that have been read
// (they stay in the page cache): they no longer count in the process's
// memory, and are mapped again when read again.
func releaseMapped(b []byte) {
	if n := len(b) &^ (os.Getpagesize() - 1); n > 0 {
		_ = unix.Madvise(b[:n], unix.MADV_DONTNEED)
	}
}
