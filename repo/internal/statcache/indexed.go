package statcache

import (
	"encoding/binary"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"unsafe"

	"github.com/chunkvc/chunkvc/repo/internal/confine"
)

// LoadIndexed is Load for a caller that looks entries up by path (Lookup,
// LayoutOf, Last, IsLazy) and rarely saves: the file is checked whole
// (checksum and every field, as Load does) but its entries are decoded
// one at a time when asked for. The cache keeps where each entry begins,
// in the file's order, which is the paths' byte order: a lookup is a
// binary search, or none when paths are asked for in that order (status
// and commit walk the sorted work tree), and no map of every path is made.
func LoadIndexed(git *confine.Tree, root string) *Cache {
	c := &Cache{Entries: map[string]Entry{}, t: git}
	data := mapFile(git, statCacheRel, c)
	c.mapped = data != nil
	if data == nil {
		var err error
		if data, err = git.ReadFile(statCacheRel, confine.NoLimit); err != nil {
			return Load(git, root) // the JSON cache, or none
		}
	}
	git.Close()
	c.window = FSWindow(root)
	body, ok := checked(data)
	if !ok || len(body) >= math.MaxInt32 {
		return c
	}
	// The file's bytes are this cache's alone and never written: its
	// strings may share them rather than copy 150 bytes a file (those
	// handed out are copied when the bytes are a mapping, see get).
	c.body = unsafe.String(unsafe.SliceData(body), len(body))
	n, _ := binary.Uvarint(body)
	idx := make([]int32, 0, min(n, uint64(len(body))))
	last, sorted := "", true
	err := scanSpans(c.body, func(p string, start, _ int) {
		if len(idx) > 0 && p <= last {
			sorted = false
		}
		last = p
		idx = append(idx, int32(start))
	})
	switch {
	case err != nil:
		c.body = ""
	case !sorted: // not as encode writes it: decoded whole, as Load does
		if entries, err := decode(data); err == nil {
			c.Entries = entries
		}
		c.body = ""
	default:
		c.idx = idx
	}
	return c
}

// pathAt returns the path of the i-th entry of an indexed cache's file,
// and the offset of its fields.
func (c *Cache) pathAt(i int) (string, int) {
	d := decoder{s: c.body, pos: int(c.idx[i])}
	p := d.str(d.uvarint())
	return p, d.pos
}

// find returns the offset of p's fields in an indexed cache's file, under
// c.mu: the entry after the last one found is tried first.
func (c *Cache) find(p string) (int, bool) {
	if c.next < len(c.idx) {
		if q, at := c.pathAt(c.next); q == p {
			c.next++
			return at, true
		}
	}
	i, ok := sort.Find(len(c.idx), func(i int) int {
		q, _ := c.pathAt(i)
		return strings.Compare(p, q)
	})
	if !ok {
		return 0, false
	}
	_, at := c.pathAt(i)
	c.next = i + 1
	return at, true
}

// get returns p's entry, under c.mu; its strings are its own.
func (c *Cache) get(p string) (Entry, bool) {
	e, ok := c.borrow(p)
	if c.mapped && e.Manifest != "" {
		e.Manifest = strings.Clone(e.Manifest) // the mapping goes with c
	}
	return e, ok
}

// borrow is get, whose strings may be the mapped file's: they must not
// outlive c.
func (c *Cache) borrow(p string) (Entry, bool) {
	if e, ok := c.Entries[p]; ok || c.idx == nil || c.gone[p] {
		return e, ok
	}
	at, ok := c.find(p)
	if !ok {
		return Entry{}, false
	}
	d := decoder{s: c.body, pos: at}
	return d.entry(), true
}

// all returns every entry, under c.mu: Entries itself unless indexed.
func (c *Cache) all() map[string]Entry {
	if c.idx == nil {
		return c.Entries
	}
	m := make(map[string]Entry, len(c.idx)+len(c.Entries))
	for i := range c.idx {
		p, at := c.pathAt(i)
		if !c.gone[p] {
			d := decoder{s: c.body, pos: at}
			m[p] = d.entry()
		}
	}
	maps.Copy(m, c.Entries)
	return m
}

// writeTo writes the cache file of c's entries to w, under c.mu. An
// indexed cache's file is its old one merged with what was Put and
// Dropped: the entries left as they were are copied as they are, runs of
// them at a time, not decoded and encoded again.
func (c *Cache) writeTo(w io.Writer) error {
	if c.idx == nil {
		return encodeTo(w, c.Entries)
	}
	puts := slices.Sorted(maps.Keys(c.Entries))
	replaced := func(p string) bool {
		_, put := c.Entries[p]
		return put || c.gone[p]
	}
	n := len(puts)
	for i := range c.idx {
		if p, _ := c.pathAt(i); !replaced(p) {
			n++
		}
	}
	s := newSink(w)
	s.b = append(s.b, statCacheMagic...)
	s.b = binary.AppendUvarint(s.b, uint64(n))
	run, runEnd := 0, 0 // the kept entries not yet copied: c.body[run:runEnd]
	j := 0
	for i := range c.idx {
		p, _ := c.pathAt(i)
		if j < len(puts) && puts[j] < p || replaced(p) {
			s.copy(c.body[run:runEnd])
			run, runEnd = 0, 0
		}
		for ; j < len(puts) && puts[j] < p; j++ {
			s.b = appendEntry(s.b, puts[j], c.Entries[puts[j]])
			s.spill()
		}
		if replaced(p) {
			continue
		}
		if runEnd == 0 {
			run = int(c.idx[i])
		}
		runEnd = len(c.body)
		if i+1 < len(c.idx) {
			runEnd = int(c.idx[i+1])
		}
	}
	s.copy(c.body[run:runEnd])
	for ; j < len(puts); j++ {
		s.b = appendEntry(s.b, puts[j], c.Entries[puts[j]])
		s.spill()
	}
	return s.close()
}
