package binrec

import (
	"bufio"
	"bytes"
	"io"
	"os"
)

// SumLen is the length of the checksum that ends a summed file.
const SumLen = 32

// Summed reads, as a stream, a file whose last SumLen bytes are a
// checksum of all before them (the seen cache, the manifest cache: the
// caller's BLAKE3): R yields the body through a buffer, never the whole
// file, and writes it to the caller's hash as it goes; Whole, once R is
// read to its end, reports whether that hash is the checksum. Until then
// nothing read is to be trusted.
type Summed struct {
	R    *bufio.Reader
	Size int64 // of the body
	want [SumLen]byte
}

// NewSummed reads a summed file of size bytes from r, writing its body to
// hash as it is read; ok is false when it is too short to hold a checksum
// or its checksum cannot be read.
func NewSummed(r io.ReaderAt, size int64, hash io.Writer) (s *Summed, ok bool) {
	if size < SumLen {
		return nil, false
	}
	s = &Summed{Size: size - SumLen}
	if _, err := r.ReadAt(s.want[:], s.Size); err != nil {
		return nil, false
	}
	s.R = bufio.NewReaderSize(io.TeeReader(io.NewSectionReader(r, 0, s.Size), hash), 64<<10)
	return s, true
}

// OpenSummed opens the summed file name, which must be a regular file,
// for NewSummed; the caller closes f.
func OpenSummed(name string, hash io.Writer) (s *Summed, f *os.File, ok bool) {
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, false
	}
	fi, err := f.Stat()
	if err == nil && fi.Mode().IsRegular() {
		if s, ok = NewSummed(f, fi.Size(), hash); ok {
			return s, f, true
		}
	}
	_ = f.Close() // read-only
	return nil, nil, false
}

// Whole reports whether R is at the body's end and sum, the hash of the
// body taken once its last record was read, is the checksum the file
// ends with.
func (s *Summed) Whole(sum []byte) bool {
	if _, err := s.R.ReadByte(); err != io.EOF {
		return false // bytes after the last record
	}
	return bytes.Equal(sum, s.want[:])
}
