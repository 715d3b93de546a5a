//go:build unix

package gitdb

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// fileIdentity is fi's inode number.
func fileIdentity(fi fs.FileInfo) (uint64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(st.Ino), true //nolint:unconvert // not uint64 on every unix
}

// processAlive reports whether a process pid exists (or may: one another
// user owns answers EPERM).
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}
