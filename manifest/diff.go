package manifest

import "github.com/chunkvc/chunkvc/hashing"

// Change says what happened to one chunk key between two manifests.
type Change int

// Change kinds.
const (
	Unchanged Change = iota
	Added
	Removed
	Modified
)

func (c Change) String() string {
	return [...]string{"unchanged", "added", "removed", "changed"}[c]
}

// KeyDelta is one key's change.
type KeyDelta struct {
	Key      string
	Change   Change
	Old, New *Chunk // nil when absent
}

// Delta is the set-difference of two manifests by key.
type Delta struct {
	Keys []KeyDelta // in natural key order
	// Counts by change kind.
	Added, Removed, Changed, Unchanged int
	// NewBytes is the size of chunks in b whose hash a does not have at all:
	// what a commit of b would upload when a is already stored.
	NewBytes int64
}

// Diff compares a and b (either may be nil, meaning no file). Both chunk
// lists are sorted, so this is a linear merge.
func Diff(a, b *Manifest) Delta {
	var ac, bc []Chunk
	if a != nil {
		ac = a.Chunks
	}
	if b != nil {
		bc = b.Chunks
	}
	// Every key of the longer list is in Keys: room for them at once.
	d := Delta{Keys: make([]KeyDelta, 0, max(len(ac), len(bc)))}
	d.NewBytes = newBytes(ac, bc)
	i, j := 0, 0
	for i < len(ac) || j < len(bc) {
		switch {
		case j == len(bc) || (i < len(ac) && NaturalLess(ac[i].Key, bc[j].Key)):
			d.Keys = append(d.Keys, KeyDelta{Key: ac[i].Key, Change: Removed, Old: &ac[i]})
			d.Removed++
			i++
		case i == len(ac) || NaturalLess(bc[j].Key, ac[i].Key):
			d.Keys = append(d.Keys, KeyDelta{Key: bc[j].Key, Change: Added, New: &bc[j]})
			d.Added++
			j++
		default:
			k := KeyDelta{Key: bc[j].Key, Old: &ac[i], New: &bc[j]}
			if ac[i].ID == bc[j].ID && ac[i].Size == bc[j].Size {
				k.Change = Unchanged
				d.Unchanged++
			} else {
				k.Change = Modified
				d.Changed++
			}
			d.Keys = append(d.Keys, k)
			i++
			j++
		}
	}
	return d
}

// newBytes is the size of the chunks of bc whose ID ac does not have,
// each ID once. ac's IDs are looked up in an IDIndex (12 bytes a chunk)
// and only the new IDs go in a map: a map of every ID took 60 bytes a
// chunk, 60 MB for a one-chunk edit of a million-chunk dataset.
func newBytes(ac, bc []Chunk) int64 {
	old := NewIDIndex(ac)
	counted := map[hashing.ID]bool{}
	var n int64
	for _, c := range bc {
		if _, ok := old.Find(c.ID); ok || counted[c.ID] {
			continue
		}
		counted[c.ID] = true
		n += c.Size
	}
	return n
}
