package manifest

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/chunkvc/chunkvc/hashing"
)

const layoutMagic = "chunkvc-layout 1\n"

// Piece is one segment of a layout blob: inline bytes, or a chunk by id.
type Piece struct {
	Len    int64
	Chunk  bool
	ID     hashing.ID // when Chunk
	Inline []byte     // when !Chunk; len(Inline) == Len
}

// Layout is the recipe that rebuilds a file: its pieces in file order.
type Layout struct {
	Size   int64
	Pieces []Piece
}

// Append adds a piece, merging adjacent inline pieces.
func (l *Layout) Append(p Piece) {
	if p.Len == 0 {
		return
	}
	if n := len(l.Pieces); n > 0 && !p.Chunk && !l.Pieces[n-1].Chunk {
		last := &l.Pieces[n-1]
		last.Inline = append(last.Inline, p.Inline...)
		last.Len += p.Len
	} else {
		if !p.Chunk {
			p.Inline = append([]byte(nil), p.Inline...)
		}
		l.Pieces = append(l.Pieces, p)
	}
	l.Size += p.Len
}

// Encode returns the canonical bytes of l.
func (l *Layout) Encode() []byte {
	var b bytes.Buffer
	b.WriteString(layoutMagic)
	var tmp [binary.MaxVarintLen64]byte
	put := func(v uint64) { b.Write(tmp[:binary.PutUvarint(tmp[:], v)]) }
	put(uint64(l.Size))
	put(uint64(len(l.Pieces)))
	for _, p := range l.Pieces {
		if p.Chunk {
			b.WriteByte(1)
			put(uint64(p.Len))
			b.Write(p.ID[:])
		} else {
			b.WriteByte(0)
			put(uint64(p.Len))
			b.Write(p.Inline)
		}
	}
	return b.Bytes()
}

// DecodeLayout parses a layout blob, bounding every count by the bytes
// that remain and checking that the pieces add up to the file size.
func DecodeLayout(data []byte) (*Layout, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: layout: %s", ErrInvalid, fmt.Sprintf(format, a...))
	}
	if !bytes.HasPrefix(data, []byte(layoutMagic)) {
		return nil, bad("bad magic")
	}
	rest := data[len(layoutMagic):]
	get := func() (uint64, error) {
		v, n := binary.Uvarint(rest)
		if n <= 0 {
			return 0, bad("truncated number")
		}
		rest = rest[n:]
		return v, nil
	}
	size, err := get()
	if err != nil {
		return nil, err
	}
	count, err := get()
	if err != nil {
		return nil, err
	}
	if size > 1<<62 || count > uint64(len(rest))/2 {
		return nil, bad("size %d or piece count %d out of range", size, count)
	}
	l := &Layout{Size: int64(size), Pieces: make([]Piece, 0, count)}
	var total uint64
	for i := uint64(0); i < count; i++ {
		if len(rest) == 0 {
			return nil, bad("truncated at piece %d", i)
		}
		kind := rest[0]
		rest = rest[1:]
		n, err := get()
		if err != nil {
			return nil, err
		}
		if n == 0 || n > size-total {
			return nil, bad("piece %d length %d does not fit the %d-byte file", i, n, size)
		}
		total += n
		switch kind {
		case 0:
			if n > uint64(len(rest)) {
				return nil, bad("piece %d: %d inline bytes, %d left", i, n, len(rest))
			}
			l.Pieces = append(l.Pieces, Piece{Len: int64(n), Inline: rest[:n:n]})
			rest = rest[n:]
		case 1:
			if n > MaxChunkLen || len(rest) < 32 {
				return nil, bad("piece %d: chunk length %d or truncated id", i, n)
			}
			p := Piece{Len: int64(n), Chunk: true}
			copy(p.ID[:], rest[:32])
			rest = rest[32:]
			l.Pieces = append(l.Pieces, p)
		default:
			return nil, bad("piece %d has kind %d", i, kind)
		}
	}
	if total != size || len(rest) != 0 {
		return nil, bad("pieces cover %d of %d bytes, %d bytes left over", total, size, len(rest))
	}
	return l, nil
}
