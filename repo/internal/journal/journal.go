package journal

import (
	"encoding/binary"
	"errors"

	"github.com/chunkvc/chunkvc/hashing"
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
	d := &decoder{b: body[len(Magic):]}
	id := func() (out hashing.ID) {
		copy(out[:], d.bytes(32))
		return out
	}
	j := &Journal{}
	j.Path = string(d.bytes(d.uvarint()))
	if hashing.Sum(body) != hashing.ID(b[len(b)-32:]) {
		return j, ErrDamaged
	}
	j.Ino = d.uvarint()
	j.OldSize, j.NewSize = int64(d.uvarint()), int64(d.uvarint())
	j.Digest, j.Layout = id(), id()
	count := d.uvarint()
	for i := uint64(0); !d.bad && i < count; i++ {
		off := d.uvarint()
		j.Spans = append(j.Spans, Span{int64(off), d.bytes(d.uvarint())})
	}
	if d.bad || len(d.b) != 0 || j.OldSize < 0 || j.NewSize < 0 {
		return j, ErrDamaged
	}
	return j, nil
}

// decoder reads the journal's fields, uvarints and bytes as the stat
// cache encodes them; a short or malformed field sets bad and yields
// zeros.
type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes(n uint64) []byte {
	if d.bad || n > uint64(len(d.b)) {
		d.bad = true
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}
