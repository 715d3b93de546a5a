package manifest

import (
	"bytes"
	"encoding/binary"
	"slices"
	"sort"

	"github.com/chunkvc/chunkvc/hashing"
)

// IDIndex finds a manifest's chunks by ID: the places of the chunks
// (their indexes in the slice it was built from) sorted by ID, each with
// the first 8 bytes of its ID, searched by binary search. About 12 bytes a
// chunk, where a map from ID takes over 60: a checkout holds one for
// every chunk of a file of 500,000 tiles while it writes it. It reads the
// full IDs from the chunks it was built from, which must not change.
type IDIndex struct {
	chunks []Chunk
	prefix []uint64 // sorted; prefix[i] is the first 8 bytes of chunks[place[i]].ID
	place  []int32  // by ID, then place: the first place of an ID comes first
}

// NewIDIndex indexes chunks (at most 2^31 of them) by ID.
func NewIDIndex(chunks []Chunk) *IDIndex {
	type entry struct {
		prefix uint64
		place  int32
	}
	es := make([]entry, len(chunks))
	for i := range chunks {
		es[i] = entry{idPrefix(chunks[i].ID), int32(i)}
	}
	slices.SortFunc(es, func(a, b entry) int {
		switch {
		case a.prefix < b.prefix:
			return -1
		case a.prefix > b.prefix:
			return 1
		}
		if c := bytes.Compare(chunks[a.place].ID[8:], chunks[b.place].ID[8:]); c != 0 {
			return c
		}
		return int(a.place - b.place)
	})
	x := &IDIndex{chunks: chunks, prefix: make([]uint64, len(es)), place: make([]int32, len(es))}
	for i, e := range es {
		x.prefix[i], x.place[i] = e.prefix, e.place
	}
	return x
}

// Find returns the first place of id in the chunks, if it is there.
func (x *IDIndex) Find(id hashing.ID) (int, bool) {
	p := idPrefix(id)
	for i := sort.Search(len(x.prefix), func(i int) bool { return x.prefix[i] >= p }); i < len(x.prefix) && x.prefix[i] == p; i++ {
		// IDs sharing a prefix (rare: a 2^-64 chance a pair) are sorted by
		// the rest, so the first equal one is the first place.
		if at := int(x.place[i]); x.chunks[at].ID == id {
			return at, true
		}
	}
	return -1, false
}

// Len returns the number of chunks indexed.
func (x *IDIndex) Len() int { return len(x.place) }

func idPrefix(id hashing.ID) uint64 { return binary.BigEndian.Uint64(id[:8]) }
