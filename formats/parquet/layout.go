package parquet

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/formats/generic"
	"github.com/chunkvc/chunkvc/geom"
)

// Limits. They shape chunk boundaries, so they are part of Params and of
// the adapter version.
const (
	// MaxFooter is the largest footer (FileMetaData) the adapter reads.
	MaxFooter = 64 << 20
	// GapMin: gaps (bytes no metadata accounts for) up to this size stay
	// inline; larger ones are cut by content.
	GapMin = 4 << 10
	// SplitMin: a page or unwalkable column chunk larger than this is cut
	// by content into "<key>@" chunks.
	SplitMin = 8 << 20
	// maxHeader is the largest page or bloom filter header we look for.
	maxHeader = 1 << 20
)

// Version is the adapter version; bump it when keys or boundaries change.
const Version = 1

// Params is the parameter string written in manifests.
var Params = fmt.Sprintf("gap=%d split=%d %s", GapMin, SplitMin, generic.Params)

var magic = []byte("PAR1")

// Adapter is the Parquet / GeoParquet format adapter. The zero value is
// ready to use.
type Adapter struct {
	// Footprints caches row-group footprints decoded from WKB (row groups
	// without covering or geospatial statistics), keyed by the hash of the
	// geometry column chunk, so re-enumerating an edited file decodes only
	// the row groups whose geometry chunk changed. Nil means a
	// package-level cache of DefaultFootprintEntries footprints.
	Footprints *FootprintCache
}

var _ formats.Adapter = Adapter{}

// Name implements formats.Adapter.
func (Adapter) Name() string { return formats.Parquet }

// Detect reports whether head starts with the Parquet magic "PAR1".
func (Adapter) Detect(head []byte) bool { return bytes.HasPrefix(head, magic) }

// Range kinds.
const (
	kindData   = iota // a column chunk: pages, or the whole chunk
	kindCI            // ColumnIndex: position independent → own chunk
	kindBloom         // bloom filter (header + bitset) → own chunk
	kindInline        // OffsetIndex: absolute offsets → skeleton
)

type span struct {
	off, n int64
	kind   int
	rg     int // row group index
	key    string
	bbox   *geom.BBox
	what   string // for error messages
}

// Layout implements formats.Adapter. Anything it does not fully understand
// is an error (the caller then falls back to the generic adapter).
func (a Adapter) Layout(ctx context.Context, r io.ReaderAt, size int64) (*formats.Layout, error) {
	m, dataEnd, err := openFooter(r, size)
	if err != nil {
		return nil, err
	}
	g := parseGeo(m)
	list, err := spans(r, m, g, dataEnd)
	if err != nil {
		return nil, err
	}
	// Only now, with every range checked, are the WKB values decoded.
	if err := a.decodeFootprints(ctx, r, size, m, g, dataEnd); err != nil {
		return nil, err
	}
	if g.decoded != nil {
		for i := range list {
			if s := &list[i]; s.kind != kindInline {
				s.bbox = g.rowGroupBBox(s.rg, &m.rowGroups[s.rg])
			}
		}
	}
	segs := []formats.Segment{{Off: 0, Len: 4}}
	pos := int64(4)
	// Page chunks are bounded per file so that forged tiny pages cannot
	// make the layout many times larger than the file.
	budget := int64(1<<18) + size/512
	for i, s := range list {
		if i%64 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if segs, err = gap(ctx, r, segs, pos, s.off); err != nil {
			return nil, err
		}
		switch s.kind {
		case kindInline:
			segs = append(segs, formats.Segment{Off: s.off, Len: s.n})
		case kindData:
			var ps []formats.Segment
			if ps, err = pages(ctx, r, s, &budget); err != nil {
				return nil, err
			}
			segs = append(segs, ps...)
		default:
			if segs, err = chunk(ctx, r, segs, s.off, s.n, s.key, s.bbox); err != nil {
				return nil, err
			}
		}
		pos = s.off + s.n
	}
	if segs, err = gap(ctx, r, segs, pos, dataEnd); err != nil {
		return nil, err
	}
	segs = append(segs, formats.Segment{Off: dataEnd, Len: size - dataEnd})
	return &formats.Layout{
		Format:   formats.Parquet,
		Version:  Version,
		Params:   Params,
		Summary:  summary(m, g),
		Segments: formats.Coalesce(segs),
	}, nil
}

// openFooter reads and decodes the footer (readFooter, decodeFooter) of a
// file whose columns are not encrypted, and returns where the data ends.
func openFooter(r io.ReaderAt, size int64) (*fileMeta, int64, error) {
	footer, dataEnd, err := readFooter(r, size)
	if err != nil {
		return nil, 0, err
	}
	m, err := decodeFooter(footer)
	if err != nil {
		return nil, 0, err
	}
	if m.encrypted {
		return nil, 0, errors.New("encrypted columns (encryption_algorithm in the footer)")
	}
	return m, dataEnd, nil
}

// readFooter checks both magics and the footer length, reads the footer and
// validates its Thrift encoding before anything decodes it. It returns the
// FileMetaData bytes and where the footer starts (the end of the data).
func readFooter(r io.ReaderAt, size int64) ([]byte, int64, error) {
	if size < 12 {
		return nil, 0, fmt.Errorf("%d bytes is too small for a Parquet file", size)
	}
	var head [4]byte
	var tail [8]byte
	if err := readAt(r, head[:], 0); err != nil {
		return nil, 0, err
	}
	if err := readAt(r, tail[:], size-8); err != nil {
		return nil, 0, err
	}
	if !bytes.Equal(head[:], magic) {
		return nil, 0, errors.New("no PAR1 magic at the start")
	}
	if string(tail[4:]) == "PARE" {
		return nil, 0, errors.New("encrypted footer (PARE)")
	}
	if !bytes.Equal(tail[4:], magic) {
		return nil, 0, errors.New("no PAR1 magic at the end (truncated file?)")
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	if n > size-12 {
		return nil, 0, fmt.Errorf("footer length %d does not fit in a %d-byte file", n, size)
	}
	if n > MaxFooter {
		return nil, 0, fmt.Errorf("footer length %d is over the %d-byte limit", n, MaxFooter)
	}
	footer := make([]byte, n)
	if err := readAt(r, footer, size-8-n); err != nil {
		return nil, 0, err
	}
	used, err := validate(footer)
	if err != nil {
		return nil, 0, fmt.Errorf("footer is not valid Thrift: %w", err)
	}
	return footer[:used], size - 8 - n, nil
}

func readAt(r io.ReaderAt, b []byte, off int64) error {
	n, err := r.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("read %d bytes at %d: %w", len(b), off, err)
}

// spans lists every byte range the footer accounts for, sorted, checked to
// lie in [4, dataEnd) and not to overlap.
func spans(r io.ReaderAt, m *fileMeta, g *geoInfo, dataEnd int64) ([]span, error) {
	var out []span
	rg := 0
	add := func(off, n int64, kind int, key string, bbox *geom.BBox, what string) error {
		if n == 0 {
			return nil
		}
		if off < 4 || n < 0 || off > dataEnd || n > dataEnd-off {
			return fmt.Errorf("%s (bytes %d..+%d) lies outside the data area [4, %d)", what, off, n, dataEnd)
		}
		out = append(out, span{off: off, n: n, kind: kind, rg: rg, key: key, bbox: bbox, what: what})
		return nil
	}
	keys := newKeyer()
	for i := range m.rowGroups {
		rg = i
		bbox := g.rowGroupBBox(i, &m.rowGroups[i])
		seen := map[string]bool{}
		for j := range m.rowGroups[i].cols {
			c := &m.rowGroups[i].cols[j]
			key := fmt.Sprintf("rg%d/%s", i, keys.column(c))
			what := fmt.Sprintf("column chunk %s", key)
			switch {
			case seen[key]:
				return nil, fmt.Errorf("row group %d has two column chunks keyed %s", i, key)
			case c.external:
				return nil, fmt.Errorf("%s is in another file (file_path set)", what)
			case c.crypto:
				return nil, fmt.Errorf("%s is encrypted", what)
			case !c.hasMeta:
				return nil, fmt.Errorf("%s has no metadata", what)
			}
			seen[key] = true
			start := c.start()
			if err := add(start, c.totalCompressed, kindData, key, bbox, what); err != nil {
				return nil, err
			}
			if c.ciOff != 0 || c.ciLen != 0 {
				if err := add(c.ciOff, int64(c.ciLen), kindCI, key+"/ci", bbox, "column index of "+key); err != nil {
					return nil, err
				}
			}
			if c.oiOff != 0 || c.oiLen != 0 {
				if err := add(c.oiOff, int64(c.oiLen), kindInline, "", nil, "offset index of "+key); err != nil {
					return nil, err
				}
			}
			if c.bloomOff > 0 {
				n := int64(c.bloomLen)
				if n == 0 {
					// Older writers leave out bloom_filter_length: measure
					// header + bitset; if that fails the bytes stay a gap.
					n = bloomLength(r, c.bloomOff, dataEnd)
				}
				if err := add(c.bloomOff, n, kindBloom, key+"/bloom", bbox, "bloom filter of "+key); err != nil {
					return nil, err
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].off < out[j].off })
	for i := 1; i < len(out); i++ {
		if p := out[i-1]; out[i].off < p.off+p.n {
			return nil, fmt.Errorf("%s (bytes %d..+%d) overlaps %s (bytes %d..+%d)", out[i].what, out[i].off, out[i].n, p.what, p.off, p.n)
		}
	}
	return out, nil
}

func bloomLength(r io.ReaderAt, off, dataEnd int64) int64 {
	if off < 4 || off >= dataEnd {
		return 0
	}
	b := make([]byte, min(dataEnd-off, 256))
	if readAt(r, b, off) != nil {
		return 0
	}
	hdr, n, err := bloomHeader(b)
	if err != nil || int64(n) > dataEnd-off-int64(hdr) {
		return 0
	}
	return int64(hdr) + int64(n)
}

// gap emits bytes [from, to) that no metadata accounts for: inline when
// small, content-defined chunks otherwise.
func gap(ctx context.Context, r io.ReaderAt, segs []formats.Segment, from, to int64) ([]formats.Segment, error) {
	switch n := to - from; {
	case n <= 0:
		return segs, nil
	case n <= GapMin:
		return append(segs, formats.Segment{Off: from, Len: n}), nil
	default:
		s, err := generic.Split(ctx, r, from, n, "gap", nil)
		return append(segs, s...), err
	}
}

// chunk emits one chunk, cut by content when it is over SplitMin.
func chunk(ctx context.Context, r io.ReaderAt, segs []formats.Segment, off, n int64, key string, bbox *geom.BBox) ([]formats.Segment, error) {
	if n <= SplitMin {
		return append(segs, formats.Segment{Off: off, Len: n, Key: key, BBox: bbox}), nil
	}
	s, err := generic.Split(ctx, r, off, n, key, bbox)
	return append(segs, s...), err
}

// pages cuts a column chunk into its pages when walking the page headers
// lands exactly on the chunk's end within *budget pages (which it then
// lowers), and returns the whole chunk otherwise.
func pages(ctx context.Context, r io.ReaderAt, s span, budget *int64) ([]formats.Segment, error) {
	lens := walkPages(ctx, r, s.off, s.n, *budget)
	if lens == nil {
		return chunk(ctx, r, nil, s.off, s.n, s.key, s.bbox)
	}
	*budget -= int64(len(lens))
	var segs []formats.Segment
	off := s.off
	var err error
	for i, n := range lens {
		if segs, err = chunk(ctx, r, segs, off, n, fmt.Sprintf("%s/p%d", s.key, i), s.bbox); err != nil {
			return nil, err
		}
		off += n
	}
	return segs, nil
}

// walkPages returns the lengths (header + compressed body) of the pages in
// [off, off+n), or nil when the headers do not tile the range exactly in at
// most limit pages.
func walkPages(ctx context.Context, r io.ReaderAt, off, n, limit int64) []int64 {
	var lens []int64
	buf := make([]byte, 1<<10)
	for pos := int64(0); pos < n; {
		if int64(len(lens)) >= limit || len(lens)%256 == 255 && ctx.Err() != nil {
			return nil
		}
		want := int64(1 << 10)
		var hdr int
		var size int32
		for {
			b := buf[:min(want, n-pos)]
			if readAt(r, b, off+pos) != nil {
				return nil
			}
			var err error
			if hdr, size, err = pageHeader(b); err == nil {
				break
			}
			if int64(len(b)) == n-pos || want >= maxHeader {
				return nil
			}
			want *= 32
			if int64(cap(buf)) < min(want, n-pos) {
				buf = make([]byte, min(want, n-pos))
			}
		}
		pl := int64(hdr) + int64(size)
		if pl > n-pos {
			return nil
		}
		lens = append(lens, pl)
		pos += pl
	}
	return lens
}
