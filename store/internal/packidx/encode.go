package packidx

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/chunkvc/chunkvc/hashing"
)

// Encode returns the index file for ix. It sorts ix.Entries in place and
// fails if they break a rule that Decode checks.
func Encode(ix Index) ([]byte, error) {
	slices.SortFunc(ix.Entries, func(a, b Entry) int { return Compare(a.ID, b.ID) })
	if err := check(ix); err != nil {
		return nil, fmt.Errorf("encode pack index: %w", err)
	}
	b := make([]byte, 0, HeaderSize+len(ix.Entries)*EntrySize+ChecksumSize)
	b = append(b, magic...)
	b = binary.LittleEndian.AppendUint32(b, Version)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(ix.Entries)))
	b = binary.LittleEndian.AppendUint64(b, uint64(ix.PackSize))
	for _, e := range ix.Entries {
		b = append(b, e.ID[:]...)
		b = binary.LittleEndian.AppendUint64(b, uint64(e.Offset))
		b = binary.LittleEndian.AppendUint64(b, uint64(e.Stored))
		b = binary.LittleEndian.AppendUint64(b, uint64(e.Size))
		b = append(b, byte(e.Encoding), e.Depth)
		b = append(b, e.Base[:]...)
	}
	sum := hashing.Sum(b)
	return append(b, sum[:]...), nil
}

// Checksum returns the trailing checksum of an encoded index, which names
// the pack.
func Checksum(b []byte) hashing.ID {
	var id hashing.ID
	if len(b) >= ChecksumSize {
		copy(id[:], b[len(b)-ChecksumSize:])
	}
	return id
}

// check enforces the rules on an index's content.
func check(ix Index) error {
	if ix.PackSize < PackHeaderSize {
		return fmt.Errorf("pack size %d is below the %d-byte header", ix.PackSize, PackHeaderSize)
	}
	if uint64(len(ix.Entries)) > 1<<32-1 {
		return fmt.Errorf("%d entries", len(ix.Entries))
	}
	for i, e := range ix.Entries {
		if i > 0 && Compare(ix.Entries[i-1].ID, e.ID) >= 0 {
			return fmt.Errorf("entry %d (%s) is not after %s", i, e.ID.Short(), ix.Entries[i-1].ID.Short())
		}
		if err := checkEntry(e, ix.PackSize); err != nil {
			return fmt.Errorf("entry %d (%s): %w", i, e.ID.Short(), err)
		}
	}
	return nil
}

func checkEntry(e Entry, packSize int64) error {
	switch {
	case e.Offset < PackHeaderSize || e.Offset > packSize:
		return fmt.Errorf("offset %d is outside the %d-byte pack", e.Offset, packSize)
	case e.Stored < 0 || e.Stored > packSize-e.Offset:
		return fmt.Errorf("%d bytes at %d run past the %d-byte pack", e.Stored, e.Offset, packSize)
	case e.Stored > MaxSize || e.Size < 0 || e.Size > MaxSize:
		return fmt.Errorf("sizes %d (stored) and %d (raw) exceed %d", e.Stored, e.Size, MaxSize)
	}
	switch e.Encoding {
	case Raw, Zstd:
		if e.Depth != 0 || !e.Base.IsZero() {
			return fmt.Errorf("%s object with delta depth %d or base %s", e.Encoding, e.Depth, e.Base.Short())
		}
		if e.Encoding == Raw && e.Stored != e.Size {
			return fmt.Errorf("raw object stored in %d bytes, size %d", e.Stored, e.Size)
		}
	case Delta:
		if e.Depth == 0 || e.Base.IsZero() || e.Base == e.ID {
			return fmt.Errorf("delta with depth %d on base %s", e.Depth, e.Base.Short())
		}
	default:
		return fmt.Errorf("unknown encoding %d", e.Encoding)
	}
	return nil
}
