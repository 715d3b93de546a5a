//go:build (linux || darwin || freebsd || netbsd || openbsd || dragonfly) && !race

package hashing

import (
	"sync"
	"syscall"
)

// Scan's windows live outside the Go heap: a commit runs with a lax GC
// target (GOGC=400), under which a few MiB of pooled heap buffers per
// worker would cost several times that in RSS. Freed windows are kept for
// the next file, up to maxFreeWindows.
const maxFreeWindows = 8

var freeWindows struct {
	sync.Mutex
	bufs [][]byte
}

// getWindow returns a buffer of scanWindow bytes.
func getWindow() []byte {
	freeWindows.Lock()
	for n := len(freeWindows.bufs); n > 0; n = len(freeWindows.bufs) {
		b := freeWindows.bufs[n-1]
		freeWindows.bufs = freeWindows.bufs[:n-1]
		if int64(len(b)) == scanWindow {
			freeWindows.Unlock()
			return b
		}
		_ = syscall.Munmap(b) // left from another window size (tests)
	}
	freeWindows.Unlock()
	b, err := syscall.Mmap(-1, 0, int(scanWindow), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return make([]byte, scanWindow) // no mapping: the heap will do
	}
	return b
}

// putWindow gives back a buffer from getWindow; nothing may use it after.
func putWindow(b []byte) {
	freeWindows.Lock()
	defer freeWindows.Unlock()
	if len(freeWindows.bufs) < maxFreeWindows {
		freeWindows.bufs = append(freeWindows.bufs, b)
		return
	}
	_ = syscall.Munmap(b) // a heap buffer is refused (EINVAL) and left to the GC
}
