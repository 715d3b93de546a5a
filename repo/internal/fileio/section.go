package fileio

import (
	"fmt"
	"io"
)

// SectionWriter writes n bytes of W from Off; writes outside them fail.
type SectionWriter struct {
	W      io.WriterAt
	Off, N int64
}

// WriteAt writes p at offset at of the section.
func (w *SectionWriter) WriteAt(p []byte, at int64) (int, error) {
	if at < 0 || at > w.N || int64(len(p)) > w.N-at {
		return 0, fmt.Errorf("write of %d bytes at %d is outside the %d-byte segment", len(p), at, w.N)
	}
	return w.W.WriteAt(p, w.Off+at)
}
