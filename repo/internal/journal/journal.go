package journal

import (
	"encoding/binary"
	"errors"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/repo/internal/binrec"
)

// Magic opens every journal; the digit is the format version.
const Magic = "chunkvc-patch 1\n"

// ErrDamaged: the bytes are not a whole journal (short, wrong magic, a
// field cut off, or a sum that does not match).
var ErrDamaged = errors.New("damaged patch journal")

// Journal is what an interrupted patch needs undone, and what the file
// was before it.
type Journal struct {
	Path             string
	Ino              uint64
	OldSize, NewSize int64
	Digest, Layout   hashing.ID // of the version the file was
	Spans            []Span
}

// Span is bytes at an offset of the file as they were before the patch.
type Span struct {
	Off  int64
	Data []byte
}

// Encode returns the bytes of j (layout in the package doc).
func Encode(j *Journal) []byte {
	b := []byte(Magic)
	b = binary.AppendUvarint(b, uint64(len(j.Path)))
	b = append(b, j.Path...)
	b = binary.AppendUvarint(b, j.Ino)
	b = binary.AppendUvarint(b, uint64(j.OldSize))
	b = binary.AppendUvarint(b, uint64(j.NewSize))
	b = append(b, j.Digest[:]...)
	b = append(b, j.Layout[:]...)
	b = binary.AppendUvarint(b, uint64(len(j.Spans)))
	for _, u := range j.Spans {
		b = binary.AppendUvarint(b, uint64(u.Off))
		b = binary.AppendUvarint(b, uint64(len(u.Data)))
		b = append(b, u.Data...)
	}
	sum := hashing.Sum(b)
	return append(b, sum[:]...)
}

// Decode parses a journal, checking its sum. The path is returned even
// when the rest is damaged, if it can be read; the journal is never nil.
func Decode(b []byte) (*Journal, error) {
	if len(b) < len(Magic)+32 || string(b[:len(Magic)]) != Magic {
		return &Journal{}, ErrDamaged
	}
	body := b[:len(b)-32]
	d := &binrec.Reader{B: body[len(Magic):]}
	id := func() (out hashing.ID) {
		copy(out[:], d.Bytes(32))
		return out
	}
	j := &Journal{}
	j.Path = string(d.Bytes(d.Uvarint()))
	if hashing.Sum(body) != hashing.ID(b[len(b)-32:]) {
		return j, ErrDamaged
	}
	j.Ino = d.Uvarint()
	j.OldSize, j.NewSize = int64(d.Uvarint()), int64(d.Uvarint())
	j.Digest, j.Layout = id(), id()
	count := d.Uvarint()
	for i := uint64(0); !d.Bad && i < count; i++ {
		off := d.Uvarint()
		j.Spans = append(j.Spans, Span{int64(off), d.Bytes(d.Uvarint())})
	}
	if d.Bad || len(d.B) != 0 || j.OldSize < 0 || j.NewSize < 0 {
		return j, ErrDamaged
	}
	return j, nil
}
