// Package merge3 merges three versions of a manifest's chunk list (the
// merge base, ours and theirs) key by key, as Git's merge driver needs.
package merge3

import (
	"github.com/chunkvc/chunkvc/geom"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
)

// Side names where a merged chunk came from.
type Side int

const (
	// Same means all sides that have the key agree (or only ours has it).
	Same Side = iota
	// Ours means ours changed the key and theirs did not.
	Ours
	// Theirs means theirs changed (or added) the key and ours did not.
	Theirs
)

// Conflict is a key changed differently on both sides. A side that
// deleted the key has a zero ID.
type Conflict struct {
	Key          string
	BBox         *geom.BBox // of ours, else of theirs, else of the base
	Ours, Theirs hashing.ID
}

// Taken is a merged chunk and the side it came from.
type Taken struct {
	manifest.Chunk
	From Side
}

// Result is a three-way merge of chunk lists.
type Result struct {
	Chunks    []Taken // sorted as the inputs are (manifest.NaturalLess)
	Conflicts []Conflict
}

// Chunks merges ours and theirs against base. Each list must be sorted by
// manifest.NaturalLess with unique keys, as a decoded manifest's are. A
// key is kept when one side changed it, dropped when one side deleted it
// and the other left it alone, and a conflict when the sides changed it
// to different contents (a change against a delete included).
func Chunks(base, ours, theirs []manifest.Chunk) Result {
	var res Result
	bi, oi, ti := 0, 0, 0
	for oi < len(ours) || ti < len(theirs) || bi < len(base) {
		key := minKey(base, bi, ours, oi, theirs, ti)
		b, bok := at(base, &bi, key)
		o, ook := at(ours, &oi, key)
		t, tok := at(theirs, &ti, key)
		switch {
		case same(o, ook, t, tok):
			if ook {
				res.Chunks = append(res.Chunks, Taken{o, Same})
			}
		case same(b, bok, o, ook): // only theirs changed it
			if tok {
				res.Chunks = append(res.Chunks, Taken{t, Theirs})
			}
		case same(b, bok, t, tok): // only ours changed it
			if ook {
				res.Chunks = append(res.Chunks, Taken{o, Ours})
			}
		default:
			c := Conflict{Key: key}
			for _, s := range []struct {
				ch manifest.Chunk
				ok bool
			}{{o, ook}, {t, tok}, {b, bok}} {
				if s.ok && s.ch.BBox != nil {
					c.BBox = s.ch.BBox
					break
				}
			}
			if ook {
				c.Ours = o.ID
			}
			if tok {
				c.Theirs = t.ID
			}
			res.Conflicts = append(res.Conflicts, c)
		}
	}
	return res
}

// same reports whether two optional chunks have the same content: both
// absent, or both present with the same ID and size. A footprint is
// derived from the file's georeferencing, not merged on its own.
func same(a manifest.Chunk, aok bool, b manifest.Chunk, bok bool) bool {
	if aok != bok {
		return false
	}
	return !aok || (a.ID == b.ID && a.Size == b.Size)
}

// minKey is the least key at the three cursors.
func minKey(base []manifest.Chunk, bi int, ours []manifest.Chunk, oi int, theirs []manifest.Chunk, ti int) string {
	key, set := "", false
	for _, c := range []struct {
		l []manifest.Chunk
		i int
	}{{base, bi}, {ours, oi}, {theirs, ti}} {
		if c.i < len(c.l) && (!set || manifest.NaturalLess(c.l[c.i].Key, key)) {
			key, set = c.l[c.i].Key, true
		}
	}
	return key
}

// at returns l[*i] and advances *i when its key is key.
func at(l []manifest.Chunk, i *int, key string) (manifest.Chunk, bool) {
	if *i < len(l) && l[*i].Key == key {
		*i++
		return l[*i-1], true
	}
	return manifest.Chunk{}, false
}
