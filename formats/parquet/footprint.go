package parquet

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/chunkvc/chunkvc/geom"
	"github.com/chunkvc/chunkvc/hashing"
)

// Limits on decoding a geometry column chunk. A chunk over them gets no
// decoded footprint (the row group falls back to the file bbox); they are
// per chunk, so the result depends only on the chunk's bytes.
const (
	// maxDecodeChunk bounds the compressed size of a chunk we decode.
	maxDecodeChunk = 128 << 20
	// maxDecodePage bounds one page's uncompressed size.
	maxDecodePage = 64 << 20
	// maxDecodeBytes bounds the uncompressed bytes of a chunk's pages.
	maxDecodeBytes = 256 << 20
	// maxPageValues bounds num_values of one page (levels are decoded
	// into one byte per value).
	maxPageValues = 1 << 22
)

// DefaultFootprintEntries is the size of the package-level footprint
// cache used by an Adapter whose Footprints is nil.
const DefaultFootprintEntries = 1 << 14

var defaultFootprints = NewFootprintCache(DefaultFootprintEntries)

// FootprintCache remembers row-group footprints decoded from WKB, keyed by
// the hash (hashing.Sum) of the geometry column chunk's bytes together
// with the codec and schema that decode them; an unchanged chunk is never
// decoded twice. It is a bounded LRU, safe for concurrent use. A chunk
// that cannot be decoded is cached as "no footprint".
type FootprintCache struct {
	mu      sync.Mutex
	max     int
	lru     *list.List // of *footprintEntry, most recent first
	entries map[footprintKey]*list.Element

	hits, misses atomic.Int64
}

type footprintKey struct {
	chunk   hashing.ID // hashing.Sum of the column chunk byte range
	context hashing.ID // codec, physical type, schema
}

type footprintEntry struct {
	key footprintKey
	fp  footprint
}

// footprint is what decoding one geometry column chunk gave: its extent,
// or why there is none.
type footprint struct {
	bbox *geom.BBox
	why  string // set when bbox is nil: the decode error
}

// NewFootprintCache returns a cache of at most entries footprints (at
// least 1).
func NewFootprintCache(entries int) *FootprintCache {
	return &FootprintCache{max: max(entries, 1), lru: list.New(), entries: map[footprintKey]*list.Element{}}
}

// Stats returns the lookups that found a footprint and those that did not
// (each miss is one column chunk decoded).
func (c *FootprintCache) Stats() (hits, misses int64) { return c.hits.Load(), c.misses.Load() }

// Len returns the number of cached footprints.
func (c *FootprintCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

func (c *FootprintCache) get(k footprintKey) (footprint, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if !ok {
		c.misses.Add(1)
		return footprint{}, false
	}
	c.hits.Add(1)
	c.lru.MoveToFront(e)
	return e.Value.(*footprintEntry).fp, true
}

func (c *FootprintCache) put(k footprintKey, fp footprint) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[k]; ok {
		c.lru.MoveToFront(e)
		return
	}
	c.entries[k] = c.lru.PushFront(&footprintEntry{key: k, fp: fp})
	for c.lru.Len() > c.max {
		old := c.lru.Back()
		c.lru.Remove(old)
		delete(c.entries, old.Value.(*footprintEntry).key)
	}
}

// decodeFootprints fills g.decoded for the row groups that have no
// covering or geospatial statistics, from the WKB values of the primary
// geometry column (pages.go) when they are not in the cache. It runs
// after the footer pre-check. Chunks that cannot be decoded safely are
// left without a footprint.
func (a Adapter) decodeFootprints(ctx context.Context, r io.ReaderAt, size int64, m *fileMeta, g *geoInfo, dataEnd int64) error {
	if !g.ok || !strings.EqualFold(g.encoding, "WKB") {
		return nil
	}
	lv, ok := m.levels(g.primary)
	if !ok { // not a leaf right under the root: not decoded
		return nil
	}
	cache := a.Footprints
	if cache == nil {
		cache = defaultFootprints
	}
	for i := range m.rowGroups {
		rg := &m.rowGroups[i]
		if g.statsBBox(rg) != nil {
			continue
		}
		j := -1
		for k := range rg.cols {
			if rg.cols[k].samePath([]string{g.primary}) {
				j = k
				break
			}
		}
		if j < 0 {
			continue
		}
		c := &rg.cols[j]
		start := c.start()
		if c.typ != 6 || c.external || c.crypto || !c.hasMeta || c.totalCompressed <= 0 ||
			c.totalCompressed > maxDecodeChunk || start < 4 || start > dataEnd || c.totalCompressed > dataEnd-start {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		chunk := make([]byte, c.totalCompressed)
		if err := readAt(r, chunk, start); err != nil {
			return err
		}
		key := footprintKey{chunk: hashing.Sum(chunk), context: hashing.Sum(fmt.Appendf(nil, "wkb-footprint 1 codec=%d type=%d schema=%s", c.codec, c.typ, hashing.Sum(m.schemaRaw)))}
		if fp, ok := cache.get(key); ok {
			g.setDecoded(i, len(m.rowGroups), fp)
			continue
		}
		b, err := decodeChunk(ctx, chunk, c.codec, lv)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		fp := footprint{bbox: b}
		if err != nil {
			fp = footprint{why: clean(err.Error(), 200)}
		}
		cache.put(key, fp)
		g.setDecoded(i, len(m.rowGroups), fp)
	}
	return nil
}

// setDecoded records row group i's decoded footprint, or counts it among
// those that fell back and keeps the first reason.
func (g *geoInfo) setDecoded(i, n int, fp footprint) {
	if g.decoded == nil {
		g.decoded = make([]*geom.BBox, n)
	}
	g.decoded[i] = fp.bbox
	if fp.bbox == nil {
		if g.undecoded == 0 {
			g.undecodedWhy = fmt.Sprintf("rg%d: %s", i, fp.why)
		}
		g.undecoded++
	}
}

// decodeChunk returns the extent of the WKB values of a geometry column
// chunk (its bytes: chunk), levelled as lv. Each page is checked before it
// is decoded (checkPage), and decompressed with a bound (decompress).
func decodeChunk(ctx context.Context, chunk []byte, codec int32, lv levelInfo) (*geom.BBox, error) {
	var e extent
	n := 0
	err := byteArrays(chunk, codec, lv, func(v []byte) error {
		if n++; n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		_, err := wkbExtent(v, &e)
		return err
	})
	if err != nil {
		return nil, err
	}
	return e.bbox(), nil
}

// pageInfo is what readPageInfo reads from a PageHeader.
type pageInfo struct {
	hdr                 int
	kind                int32 // pageData, pageDictionary, pageDataV2 (others are skipped)
	uncompressed, size  int32
	values              int32
	nulls               int32 // v2: num_nulls
	encoding            int32 // of the values
	defEncoding         int32 // v1: of the definition levels
	repEncoding         int32 // v1: of the repetition levels
	levels              int32 // v2: repetition + definition level bytes (never compressed)
	repLevels           int32 // v2: the repetition level bytes, which come first
	v2, v2NotCompressed bool
}

// errNotDecoded is wrapped by the errors of pages the footprint decoder
// leaves alone by design: over the decode limits, or in a codec it does
// not take. The row group then gets no decoded footprint.
var errNotDecoded = errors.New("not decoded for footprints")

// checkPage checks page p, whose body has left bytes of its column chunk
// after the header, against the decode limits; total counts the
// uncompressed bytes of the chunk's pages so far.
func checkPage(p pageInfo, left int, total *int64) error {
	switch {
	case int64(p.size) > int64(left):
		return errors.New("page runs past its column chunk")
	case p.uncompressed < 0 || p.uncompressed > maxDecodePage:
		return fmt.Errorf("%w: page of %d uncompressed bytes", errNotDecoded, p.uncompressed)
	case p.values < 0 || p.values > maxPageValues:
		return fmt.Errorf("%w: page of %d values", errNotDecoded, p.values)
	case p.levels < 0 || p.levels > p.size || p.levels > p.uncompressed:
		return errors.New("page levels longer than the page")
	}
	if *total += int64(p.uncompressed); *total > maxDecodeBytes {
		return fmt.Errorf("%w: over %d uncompressed bytes", errNotDecoded, maxDecodeBytes)
	}
	return nil
}

// readPageInfo reads a PageHeader: 1 type, 2 uncompressed_page_size,
// 3 compressed_page_size, 5 data_page_header, 7 dictionary_page_header,
// 8 data_page_header_v2.
func readPageInfo(b []byte) (pageInfo, error) {
	var p pageInfo
	r := &treader{b: b, depth: 1}
	var last int16
	seen := 0
	for r.err == nil {
		t, id := r.field(&last)
		if t == tStop {
			break
		}
		switch {
		case id == 1 && t == tI32:
			p.kind = r.i32()
		case id == 2 && t == tI32:
			p.uncompressed = r.i32()
			seen |= 1
		case id == 3 && t == tI32:
			p.size = r.i32()
			seen |= 2
		case (id == 5 || id == 7 || id == 8) && t == tStruct:
			p.v2 = id == 8
			pageSubHeader(r, &p)
		default:
			r.skipField(t)
		}
	}
	switch {
	case r.err != nil:
		return p, r.err
	case seen != 3 || p.size < 0:
		return p, errors.New("page header without valid sizes")
	}
	p.hdr = r.pos
	return p, nil
}

// pageSubHeader reads num_values (field 1) of a data, dictionary or v2
// data page header, and for v2 the level lengths (5, 6) and is_compressed
// (7).
func pageSubHeader(r *treader, p *pageInfo) {
	if !r.enter() {
		return
	}
	defer func() { r.depth-- }()
	var last int16
	for r.err == nil {
		t, id := r.field(&last)
		if t == tStop {
			return
		}
		switch {
		case id == 1 && t == tI32:
			p.values = r.i32()
		case p.v2 && id == 2 && t == tI32:
			p.nulls = r.i32()
		case p.v2 && id == 4 && t == tI32, !p.v2 && id == 2 && t == tI32:
			p.encoding = r.i32()
		case !p.v2 && id == 3 && t == tI32:
			p.defEncoding = r.i32()
		case !p.v2 && id == 4 && t == tI32:
			p.repEncoding = r.i32()
		case p.v2 && (id == 5 || id == 6) && t == tI32:
			n := r.i32()
			if n < 0 || n > 1<<30 || p.levels > 1<<30 {
				r.fail(errors.New("negative level length"))
				return
			}
			p.levels += n
			if id == 6 {
				p.repLevels = n
			}
		case p.v2 && id == 7 && (t == tTrue || t == tFalse):
			p.v2NotCompressed = t == tFalse
		default:
			r.skipField(t)
		}
	}
}
