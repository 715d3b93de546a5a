package packidx

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/chunkvc/chunkvc/hashing"
)

// List gathers the entries of a pack while it is written, in 56 bytes each
// where an Entry takes 96: a batch of 500,000 small tiles holds one per
// tile until its pack is published. The delta bases, which most entries
// lack, are kept apart. The zero List is empty.
type List struct {
	slots []slot
	bases map[hashing.ID]hashing.ID // of delta entries
}

type slot struct {
	id       hashing.ID
	offset   int64
	stored   uint32 // ≤ MaxSize, as every entry of an index
	size     uint32
	encoding Encoding
	depth    uint8
}

// Append adds e. Sizes above MaxSize are refused, as Encode refuses them.
func (l *List) Append(e Entry) error {
	if e.Stored < 0 || e.Stored > MaxSize || e.Size < 0 || e.Size > MaxSize {
		return fmt.Errorf("object %s: sizes %d (stored) and %d (raw) exceed %d", e.ID.Short(), e.Stored, e.Size, MaxSize)
	}
	l.slots = append(l.slots, slot{id: e.ID, offset: e.Offset, stored: uint32(e.Stored), size: uint32(e.Size), encoding: e.Encoding, depth: e.Depth})
	if !e.Base.IsZero() {
		if l.bases == nil {
			l.bases = map[hashing.ID]hashing.ID{}
		}
		l.bases[e.ID] = e.Base
	}
	return nil
}

// Len returns the number of entries.
func (l *List) Len() int { return len(l.slots) }

// ID returns the ID of entry i, in the order of Append until Encode sorts
// them.
func (l *List) ID(i int) hashing.ID { return l.slots[i].id }

// Entry returns entry i, in the order of Append until Encode sorts them.
func (l *List) Entry(i int) Entry {
	s := &l.slots[i]
	return Entry{ID: s.id, Offset: s.offset, Stored: int64(s.stored), Size: int64(s.size),
		Encoding: s.encoding, Depth: s.depth, Base: l.bases[s.id]}
}

// Encode returns the index file of a packSize-byte pack holding the
// entries, sorting them by ID in place; it fails as Encode does.
func (l *List) Encode(packSize int64) ([]byte, error) {
	slices.SortFunc(l.slots, func(a, b slot) int { return hashing.Compare(a.id, b.id) })
	return build(packSize, len(l.slots), l.Entry)
}

// EncodeCopy is Encode that leaves the list as it is, for a list others
// still read by position: it sorts a permutation of it (4 bytes an entry).
func (l *List) EncodeCopy(packSize int64) ([]byte, error) {
	if uint64(len(l.slots)) > 1<<31-1 {
		return nil, fmt.Errorf("encode pack index: %d entries", len(l.slots))
	}
	perm := make([]int32, len(l.slots))
	for i := range perm {
		perm[i] = int32(i)
	}
	slices.SortFunc(perm, func(a, b int32) int { return hashing.Compare(l.slots[a].id, l.slots[b].id) })
	return build(packSize, len(perm), func(i int) Entry { return l.Entry(int(perm[i])) })
}

// build encodes an index of n entries that entry gives in ID order,
// checking each as Decode will.
func build(packSize int64, n int, entry func(i int) Entry) ([]byte, error) {
	if packSize < PackHeaderSize {
		return nil, fmt.Errorf("encode pack index: pack size %d is below the %d-byte header", packSize, PackHeaderSize)
	}
	if uint64(n) > 1<<32-1 {
		return nil, fmt.Errorf("encode pack index: %d entries", n)
	}
	b := make([]byte, 0, HeaderSize+n*EntrySize+ChecksumSize)
	b = append(b, magic...)
	b = binary.LittleEndian.AppendUint32(b, Version)
	b = binary.LittleEndian.AppendUint32(b, uint32(n))
	b = binary.LittleEndian.AppendUint64(b, uint64(packSize))
	var last hashing.ID
	for i := range n {
		e := entry(i)
		if i > 0 && hashing.Compare(last, e.ID) >= 0 {
			return nil, fmt.Errorf("encode pack index: entry %d (%s) is not after %s", i, e.ID.Short(), last.Short())
		}
		if err := checkEntry(e, packSize); err != nil {
			return nil, fmt.Errorf("encode pack index: entry %d (%s): %w", i, e.ID.Short(), err)
		}
		last = e.ID
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
