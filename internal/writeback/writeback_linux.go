package writeback

import (
	"os"

	"golang.org/x/sys/unix"
)

// Start starts writing f's dirty pages to disk and returns without waiting
// for them or for a journal commit, as fsync would: a later fsync then
// finds most of the file written.
func Start(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SyncFileRange(int(fd), 0, 0, unix.SYNC_FILE_RANGE_WRITE)
	}); err != nil {
		return err
	}
	return serr
}
