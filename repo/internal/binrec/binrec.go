// Package binrec reads the small binary records chunkvc keeps under
// .git/chunkvc (the patch journal, a dataset's seen cache): unsigned
// varints as encoding/binary writes them, and byte strings.
//
// Contract: a Reader never panics on any input. The first short or
// malformed field sets Bad, and every read after it yields zero values,
// so a decoder reads all its fields and checks Bad (and Rest) once.
package binrec

import "encoding/binary"

// Reader reads fields from the front of B.
type Reader struct {
	B   []byte // what is left to read
	Bad bool   // a field was short or malformed
}

// Uvarint reads an unsigned varint.
func (r *Reader) Uvarint() uint64 {
	if r.Bad {
		return 0
	}
	v, n := binary.Uvarint(r.B)
	if n <= 0 {
		r.Bad = true
		return 0
	}
	r.B = r.B[n:]
	return v
}

// Bytes reads the next n bytes (aliasing B).
func (r *Reader) Bytes(n uint64) []byte {
	if r.Bad || n > uint64(len(r.B)) {
		r.Bad = true
		return nil
	}
	v := r.B[:n]
	r.B = r.B[n:]
	return v
}

// AppendShared appends s front-coded against prev, the string written
// before it: the length of the prefix they share and of the rest
// (uvarints), then the rest's bytes. Sorted paths and keys share most of
// their bytes with the one before.
func AppendShared(b []byte, prev, s string) []byte {
	n := 0
	for n < len(prev) && n < len(s) && prev[n] == s[n] {
		n++
	}
	b = binary.AppendUvarint(b, uint64(n))
	b = binary.AppendUvarint(b, uint64(len(s)-n))
	return append(b, s[n:]...)
}
