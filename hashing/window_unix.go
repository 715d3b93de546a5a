//go:build (linux || darwin || freebsd || netbsd || openbsd || dragonfly) && !race

package hashing

import (
	"sync"
	"syscall"
	"unsafe"
)

// Scan's windows live outside the Go heap: a commit runs with a lax GC
// target (GOGC=400), under which a few MiB of pooled heap buffers per
// worker would cost several times that in RSS. Freed windows are kept for
// the next file, up to maxFreeWindows.
const maxFreeWindows = 8

var freeWindows struct {
	sync.Mutex
	bufs [][]byte
	maps map[*byte][]byte // a window's first byte → its whole mapping
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
		unmapWindow(b) // left from another window size (tests)
	}
	freeWindows.Unlock()
	// One huge page per window where the system has them: filling a fresh
	// window then costs one page fault instead of 512 (in a commit of one
	// changed file, faults were a tenth of the CPU time).
	m, err := syscall.Mmap(-1, 0, int(scanWindow+hugePage), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return make([]byte, scanWindow) // no mapping: the heap will do
	}
	at := (hugePage - int64(uintptr(unsafe.Pointer(&m[0])))%hugePage) % hugePage
	b := m[at : at+scanWindow : at+scanWindow]
	adviseHuge(b)
	freeWindows.Lock()
	if freeWindows.maps == nil {
		freeWindows.maps = map[*byte][]byte{}
	}
	freeWindows.maps[&b[0]] = m
	freeWindows.Unlock()
	return b
}

// hugePage is the size of a transparent huge page on x86-64 and arm64
// (4 KiB base pages); a window's mapping is aligned to it.
const hugePage = 2 << 20

// unmapWindow unmaps a window from getWindow's mapping; a heap buffer is
// left to the GC. freeWindows must be locked.
func unmapWindow(b []byte) {
	if m, ok := freeWindows.maps[&b[0]]; ok {
		delete(freeWindows.maps, &b[0])
		_ = syscall.Munmap(m)
	}
}

// putWindow gives back a buffer from getWindow; nothing may use it after.
func putWindow(b []byte) {
	freeWindows.Lock()
	defer freeWindows.Unlock()
	if len(freeWindows.bufs) < maxFreeWindows {
		freeWindows.bufs = append(freeWindows.bufs, b)
		return
	}
	unmapWindow(b)
}
