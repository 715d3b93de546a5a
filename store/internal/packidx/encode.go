package packidx

import (
	"fmt"
	"slices"

	"github.com/chunkvc/chunkvc/hashing"
)

// Encode returns the index file for ix. It sorts ix.Entries in place and
// fails if they break a rule that Decode checks.
func Encode(ix Index) ([]byte, error) {
	slices.SortFunc(ix.Entries, func(a, b Entry) int { return hashing.Compare(a.ID, b.ID) })
	return build(ix.PackSize, len(ix.Entries), func(i int) Entry { return ix.Entries[i] })
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
