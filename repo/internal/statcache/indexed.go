package statcache

import (
	"encoding/binary"
	"maps"
	"math"
	"slices"
	"unsafe"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/repo/internal/confine"
)

// LoadIndexed is Load for a caller that looks entries up by path (Lookup,
// LayoutOf, Last, IsLazy) and rarely saves: the file is checked whole
// (checksum and every field, as Load does) but its entries are decoded
// one at a time when asked for: the cache keeps a map from path to the
// entry's offset in the file, not a decoded Entry for every path.
func LoadIndexed(git *confine.Tree, root string) *Cache {
	data, err := git.ReadFile(statCacheRel, confine.NoLimit)
	if err != nil {
		return Load(git, root) // the JSON cache, or none
	}
	git.Close()
	c := &Cache{Entries: map[string]Entry{}, window: FSWindow(root), t: git}
	body, ok := checked(data)
	if !ok {
		return c
	}
	// The file's bytes are this cache's alone and never written: its
	// strings may share them rather than copy 150 bytes a file.
	c.body = unsafe.String(unsafe.SliceData(body), len(body))
	n, _ := binary.Uvarint(body)
	idx := make(map[string]int32, min(n, uint64(len(body))))
	if scan(c.body, func(p string, at int, _ Entry) { idx[p] = int32(at) }) == nil && len(body) < math.MaxInt32 {
		c.idx = idx
	} else {
		c.body = ""
	}
	return c
}

// get returns p's entry, under c.mu.
func (c *Cache) get(p string) (Entry, bool) {
	if e, ok := c.Entries[p]; ok || c.idx == nil || c.gone[p] {
		return e, ok
	}
	at, ok := c.idx[p]
	if !ok {
		return Entry{}, false
	}
	d := decoder{s: c.body, pos: int(at)}
	return d.entry(), true
}

// all returns every entry, under c.mu: Entries itself unless indexed.
func (c *Cache) all() map[string]Entry {
	if c.idx == nil {
		return c.Entries
	}
	m := make(map[string]Entry, len(c.idx)+len(c.Entries))
	for p, at := range c.idx {
		if !c.gone[p] {
			d := decoder{s: c.body, pos: int(at)}
			m[p] = d.entry()
		}
	}
	maps.Copy(m, c.Entries)
	return m
}

// encode returns the cache file of c's entries, under c.mu. An indexed
// cache's file is its old one merged with what was Put and Dropped: the
// entries left as they were are copied as they are, not decoded and
// encoded again.
func (c *Cache) encode() []byte {
	if c.idx == nil {
		return encode(c.Entries)
	}
	type span struct {
		p          string
		start, end int // the entry's bytes in c.body, its path's length first
	}
	var kept []span
	sorted := true
	err := scanSpans(c.body, func(p string, start, end int) {
		if n := len(kept); n > 0 && kept[n-1].p >= p {
			sorted = false
		}
		if _, put := c.Entries[p]; !put && !c.gone[p] {
			kept = append(kept, span{p, start, end})
		}
	})
	if err != nil || !sorted {
		return encode(c.all()) // not as encode writes it: start over
	}
	puts := slices.Sorted(maps.Keys(c.Entries))
	b := make([]byte, 0, len(c.body)+len(puts)*256+len(statCacheMagic)+binary.MaxVarintLen64+idLen)
	b = append(b, statCacheMagic...)
	b = binary.AppendUvarint(b, uint64(len(kept)+len(puts)))
	i := 0
	for _, k := range kept {
		for ; i < len(puts) && puts[i] < k.p; i++ {
			b = appendEntry(b, puts[i], c.Entries[puts[i]])
		}
		b = append(b, c.body[k.start:k.end]...)
	}
	for ; i < len(puts); i++ {
		b = appendEntry(b, puts[i], c.Entries[puts[i]])
	}
	sum := hashing.Sum(b)
	return append(b, sum[:]...)
}
