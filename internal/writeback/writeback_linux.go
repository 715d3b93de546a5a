package writeback

import (
	"os"

	"golang.org/x/sys/unix"
)

// Start starts writing f's dirty pages to disk and returns without waiting
// for them or for a journal commit, as fsync would: a later fsync then
// finds most of the file written.
func Start(f *os.File) error { return StartRange(f, 0, 0) }

// StartRange is Start for the n bytes at off (n 0: to the end of the
// file): a file written piece by piece starts each piece's writeback
// without the kernel walking the pages of the pieces before it again.
func StartRange(f *os.File, off, n int64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE)
	}); err != nil {
		return err
	}
	return serr
}
