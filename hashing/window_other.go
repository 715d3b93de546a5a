//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly) && !race

package hashing

import "sync"

var windows = sync.Pool{New: func() any { return new([]byte) }}

// getWindow returns a buffer of scanWindow bytes.
func getWindow() []byte {
	b := windows.Get().(*[]byte)
	if int64(len(*b)) != scanWindow {
		*b = make([]byte, scanWindow)
	}
	return *b
}

// putWindow gives back a buffer from getWindow.
func putWindow(b []byte) { windows.Put(&b) }
