package packidx

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/chunkvc/chunkvc/hashing"
)

// ErrFormat is wrapped by every error of Decode.
var ErrFormat = errors.New("damaged pack index")

// Decode parses an index file, checking its checksum and every rule of the
// format. Errors wrap ErrFormat.
func Decode(b []byte) (Index, error) {
	ix, err := decode(b)
	if err != nil {
		return Index{}, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	return ix, nil
}

func decode(b []byte) (Index, error) {
	if len(b) < HeaderSize+ChecksumSize {
		return Index{}, fmt.Errorf("%d bytes, shorter than header and checksum", len(b))
	}
	if string(b[:4]) != magic {
		return Index{}, fmt.Errorf("magic %q, want %q", b[:4], magic)
	}
	if v := binary.LittleEndian.Uint32(b[4:]); v != Version {
		return Index{}, fmt.Errorf("version %d, want %d", v, Version)
	}
	count := uint64(binary.LittleEndian.Uint32(b[8:]))
	if want := HeaderSize + count*EntrySize + ChecksumSize; uint64(len(b)) != want {
		return Index{}, fmt.Errorf("%d bytes for %d entries, want %d", len(b), count, want)
	}
	body := b[:len(b)-ChecksumSize]
	if sum := hashing.Sum(body); sum != Checksum(b) {
		return Index{}, fmt.Errorf("checksum mismatch")
	}
	packSize := binary.LittleEndian.Uint64(b[12:])
	if packSize > 1<<62 {
		return Index{}, fmt.Errorf("pack size %d", packSize)
	}
	ix := Index{PackSize: int64(packSize), Entries: make([]Entry, count)}
	for i := range ix.Entries {
		p := body[HeaderSize+i*EntrySize:]
		e := &ix.Entries[i]
		copy(e.ID[:], p)
		off, stored, size := binary.LittleEndian.Uint64(p[32:]), binary.LittleEndian.Uint64(p[40:]), binary.LittleEndian.Uint64(p[48:])
		if off > 1<<62 || stored > 1<<62 || size > 1<<62 {
			return Index{}, fmt.Errorf("entry %d: offset or size out of range", i)
		}
		e.Offset, e.Stored, e.Size = int64(off), int64(stored), int64(size)
		e.Encoding, e.Depth = Encoding(p[56]), p[57]
		copy(e.Base[:], p[58:90])
	}
	if err := check(ix); err != nil {
		return Index{}, err
	}
	return ix, nil
}
