package packidx

import (
	"encoding/binary"
	"fmt"
	"iter"
	"runtime"
	"slices"

	"github.com/chunkvc/chunkvc/hashing"
)

// Table is an index as a store consults it: Len entries, sorted by ID. It
// holds them decoded (Index.Table, for a pack built in memory) or as the
// bytes of an index file (Open), decoding one entry when it is asked for:
// a store of a million objects then costs no memory per object, and a
// command that looks up a few objects decodes a few entries. The zero
// Table is empty.
type Table struct {
	PackSize int64
	entries  []Entry
	raw      []byte       // an index file's entries, when entries is nil
	n        int          // entries in raw
	sample   []hashing.ID // of raw's entries 0, sampleEvery, 2·sampleEvery, …
	owner    *holder      // keeps raw's release from running while the table is used
}

// holder is what Open ties the release of an index file's bytes to. It
// holds a pointer so that it is not a tiny allocation, whose cleanup may
// wait on its neighbours in the same block.
type holder struct{ _ *byte }

// Table returns ix as a Table; it keeps ix.Entries, which must be sorted
// by ID, as Encode and Decode leave them.
func (ix Index) Table() Table {
	if !slices.IsSortedFunc(ix.Entries, func(a, b Entry) int { return hashing.Compare(a.ID, b.ID) }) {
		panic("packidx: entries not sorted by ID")
	}
	return Table{PackSize: ix.PackSize, entries: ix.Entries}
}

// OpenOptions tunes Open.
type OpenOptions struct {
	// Release, when not nil, is called once neither the Table nor any copy
	// of it is reachable (b is a mapping to unmap). Open takes charge of b
	// only if it succeeds.
	Release func()
	// Checked, when not nil, is called as the check goes, with how many
	// bytes of b it is done with (a mapping may let their pages go).
	Checked func(n int)
}

// Open checks an index file as Decode does (checksum and every rule) but
// decodes no entry into memory: the Table reads them from b, which must not
// change while it is used. Errors wrap ErrFormat.
func Open(b []byte, opt OpenOptions) (Table, error) {
	packSize, n, sample, err := validate(b, opt.Checked, sampleEvery)
	if err != nil {
		return Table{}, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	t := Table{PackSize: packSize, raw: b[HeaderSize : HeaderSize+n*EntrySize], n: n, sample: sample}
	if opt.Release != nil {
		t.owner = &holder{}
		runtime.AddCleanup(t.owner, func(f func()) { f() }, opt.Release)
	}
	return t, nil
}

// Len returns the number of entries.
func (t *Table) Len() int {
	if t.entries != nil {
		return len(t.entries)
	}
	return t.n
}

// Entry returns entry i, 0 ≤ i < Len.
func (t *Table) Entry(i int) Entry {
	if t.entries != nil {
		return t.entries[i]
	}
	e := entryAt(t.raw, i)
	runtime.KeepAlive(t.owner) // raw may be unmapped once owner is gone
	return e
}

// ID returns the ID of entry i.
func (t *Table) ID(i int) hashing.ID {
	if t.entries != nil {
		return t.entries[i].ID
	}
	id := hashing.ID(t.raw[i*EntrySize : i*EntrySize+32])
	runtime.KeepAlive(t.owner)
	return id
}

// sampleEvery is how far apart the entries are whose IDs a Table read
// from a file keeps in memory (half a byte per entry): a search narrows to
// sampleEvery entries in memory, then reads a page or two of the file. A
// binary search of the file alone touched a page per step, and the kernel
// maps 64 KiB around each (100 lookups in the index of a million objects
// mapped 87 MB).
const sampleEvery = 64

// Search returns the position of id's entry by binary search.
func (t *Table) Search(id hashing.ID) (int, bool) {
	lo, hi := 0, t.Len()
	if t.entries == nil && len(t.sample) > 0 {
		k, _ := slices.BinarySearchFunc(t.sample, id, hashing.Compare)
		if k < len(t.sample) && t.sample[k] == id {
			return k * sampleEvery, true
		}
		// sample[k-1] < id < sample[k]
		lo, hi = max(k-1, 0)*sampleEvery, min(k*sampleEvery, t.n)
	}
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if hashing.Compare(t.ID(m), id) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	found := lo < t.Len() && t.ID(lo) == id
	runtime.KeepAlive(t.owner)
	return lo, found
}

// All yields every entry with its position, in order.
func (t *Table) All() iter.Seq2[int, Entry] {
	return func(yield func(int, Entry) bool) {
		for i := range t.Len() {
			if !yield(i, t.Entry(i)) {
				return
			}
		}
	}
}

// entryAt decodes entry i of the entries of an index file. Decode and
// Open check each one before any is used.
func entryAt(raw []byte, i int) Entry {
	p := raw[i*EntrySize : (i+1)*EntrySize]
	var e Entry
	copy(e.ID[:], p)
	e.Offset = int64(binary.LittleEndian.Uint64(p[32:]))
	e.Stored = int64(binary.LittleEndian.Uint64(p[40:]))
	e.Size = int64(binary.LittleEndian.Uint64(p[48:]))
	e.Encoding, e.Depth = Encoding(p[56]), p[57]
	copy(e.Base[:], p[58:90])
	return e
}
