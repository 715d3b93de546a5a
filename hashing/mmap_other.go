//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package hashing

import "io"

// mapper is a stub: without mmap, blocks are read with ReadAt.
type mapper struct{}

func newMapper(io.ReaderAt) *mapper { return nil }

func (*mapper) cv(int64, int, uint64, blockHash) ([8]uint32, bool) { return [8]uint32{}, false }
