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
// full IDs from what it was built from, which must not change.
type IDIndex struct {
	id     func(place int) hashing.ID
	prefix []uint64 // sorted; prefix[i] is the first 8 bytes of id(place[i])
	place  []int32  // by ID, then place: the first place of an ID comes first
}

// NewIDIndex indexes chunks (at most 2^31 of them) by ID.
func NewIDIndex(chunks []Chunk) *IDIndex {
	places := make([]int32, len(chunks))
	for i := range places {
		places[i] = int32(i)
	}
	return IndexIDs(places, func(i int) hashing.ID { return chunks[i].ID })
}

// IndexIDs indexes places (non-negative, each once) by the IDs id gives
// them: a layout's chunk pieces, say. It keeps places.
func IndexIDs(places []int32, id func(place int) hashing.ID) *IDIndex {
	type entry struct {
		prefix uint64
		place  int32
	}
	es := make([]entry, len(places))
	for i, at := range places {
		es[i] = entry{idPrefix(id(int(at))), at}
	}
	slices.SortFunc(es, func(a, b entry) int {
		switch {
		case a.prefix < b.prefix:
			return -1
		case a.prefix > b.prefix:
			return 1
		}
		ia, ib := id(int(a.place)), id(int(b.place))
		if c := bytes.Compare(ia[8:], ib[8:]); c != 0 {
			return c
		}
		return int(a.place - b.place)
	})
	x := &IDIndex{id: id, prefix: make([]uint64, len(es)), place: places}
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
		if at := int(x.place[i]); x.id(at) == id {
			return at, true
		}
	}
	return -1, false
}

// Len returns the number of chunks indexed.
func (x *IDIndex) Len() int { return len(x.place) }

func idPrefix(id hashing.ID) uint64 { return binary.BigEndian.Uint64(id[:8]) }
