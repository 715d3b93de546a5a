package tiff

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/formats/generic"
)

// Chunking thresholds. They shape chunk boundaries, so they are part of
// Params and of the adapter version.
const (
	// GapMin: unreferenced bytes longer than this (dead tiles left by
	// in-place edits, appended data) are chunked by content, not inlined.
	GapMin = 4 << 10
	// SplitMin: a tile or strip longer than this is split by content
	// inside its range (keys "<tile key>@"), so a 2 GB strip is not one chunk.
	SplitMin = 8 << 20
	// Version is the adapter version written in manifests.
	Version = 1
)

// Params is the parameter string written in manifests.
var Params = fmt.Sprintf("gap=%d split=%d %s", GapMin, SplitMin, generic.Params)

// Adapter reads TIFF, BigTIFF, GeoTIFF and COG files, both byte orders.
type Adapter struct{}

var _ formats.Adapter = Adapter{}

// Name implements formats.Adapter.
func (Adapter) Name() string { return formats.TIFF }

// Detect accepts the classic (42) and BigTIFF (43) magic in either byte order.
func (Adapter) Detect(head []byte) bool {
	if len(head) < 4 {
		return false
	}
	switch string(head[:4]) {
	case "II*\x00", "MM\x00*", "II+\x00", "MM\x00+":
		return true
	}
	return false
}

// Layout implements formats.Adapter: tiles and strips are chunks, the
// directory is inline, dead gaps are chunked by content. Partial overlaps
// between blocks, blocks past EOF, IFD loops and absurd counts are errors
// (the caller falls back to the generic adapter).
func (Adapter) Layout(ctx context.Context, r io.ReaderAt, size int64) (*formats.Layout, error) {
	rd, err := newReader(r, size)
	if err != nil {
		return nil, err
	}
	ghost := rd.ghost()
	ims, err := rd.images(ctx)
	if err != nil {
		return nil, err
	}
	var blocks []block
	for _, im := range ims {
		if !im.hasGrid {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if blocks, err = rd.blocks(im, blocks); err != nil {
			return nil, err
		}
	}
	segs, aliases, err := rd.segments(ctx, blocks)
	if err != nil {
		return nil, err
	}
	return &formats.Layout{
		Format:   formats.TIFF,
		Version:  Version,
		Params:   Params,
		Summary:  summary(rd, ims, ghost, blocks),
		Segments: segs,
		Aliases:  aliases,
	}, nil
}

// images reads every IFD as an image, with keys assigned.
func (rd *reader) images(ctx context.Context) ([]*image, error) {
	ds, err := rd.ifds(ctx)
	if err != nil {
		return nil, err
	}
	ims := make([]*image, len(ds))
	for i, d := range ds {
		if ims[i], err = rd.readImage(d); err != nil {
			return nil, err
		}
	}
	assignKeys(rd, ims)
	return ims, nil
}

// segments turns the blocks into file-ordered segments covering the file:
// each distinct block range is a chunk (split when large), an exact
// duplicate range becomes an alias, a partial overlap is an error, and the
// bytes between blocks are inline unless they are an unreferenced gap
// longer than GapMin.
func (rd *reader) segments(ctx context.Context, blocks []block) ([]formats.Segment, []formats.Segment, error) {
	sort.SliceStable(blocks, func(i, j int) bool {
		if blocks[i].off != blocks[j].off {
			return blocks[i].off < blocks[j].off
		}
		return blocks[i].n < blocks[j].n
	})
	structure := mergeSpans(rd.structure)
	var aliases []formats.Segment
	// A block and the bytes before it (GDAL's COGs put a 4-byte leader
	// before each tile): sized once, not grown by doubling.
	segs := make([]formats.Segment, 0, 2*len(blocks)+len(structure)+8)
	var pos int64
	var prev []formats.Segment // segments of the last chunk range, for aliases
	gaps := 0
	for i, b := range blocks {
		if i%1024 == 0 && ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		if i > 0 && b.off == blocks[i-1].off && b.n == blocks[i-1].n {
			for _, s := range prev {
				key := b.key
				if strings.HasSuffix(s.Key, "@") {
					key += "@"
				}
				aliases = append(aliases, formats.Segment{Off: s.Off, Len: s.Len, Key: key, BBox: b.bbox})
			}
			continue
		}
		if b.off < pos {
			return nil, nil, fmt.Errorf("tiff: block %s (%d+%d) partly overlaps block %s", b.key, b.off, b.n, blocks[i-1].key)
		}
		var err error
		if segs, gaps, err = rd.hole(ctx, segs, structure, pos, b.off, gaps); err != nil {
			return nil, nil, err
		}
		start := len(segs)
		if b.n > SplitMin {
			sub, err := generic.Split(ctx, rd.r, b.off, b.n, b.key, b.bbox)
			if err != nil {
				return nil, nil, err
			}
			segs = append(segs, sub...)
		} else {
			segs = append(segs, formats.Segment{Off: b.off, Len: b.n, Key: b.key, BBox: b.bbox})
		}
		prev = segs[start:]
		pos = b.off + b.n
	}
	segs, _, err := rd.hole(ctx, segs, structure, pos, rd.size, gaps)
	if err != nil {
		return nil, nil, err
	}
	return formats.Coalesce(segs), aliases, nil
}

// hole covers [a, b), which no block references: bytes the directory
// references (merged, sorted structure spans) and short runs are inline;
// longer unreferenced runs are content-chunked as "gap/<n>@".
func (rd *reader) hole(ctx context.Context, segs []formats.Segment, structure []span, a, b int64, gaps int) ([]formats.Segment, int, error) {
	emit := func(p, q int64) error {
		if q-p <= GapMin {
			segs = append(segs, formats.Segment{Off: p, Len: q - p})
			return nil
		}
		sub, err := generic.Split(ctx, rd.r, p, q-p, fmt.Sprintf("gap/%d", gaps), nil)
		gaps++
		segs = append(segs, sub...)
		return err
	}
	// First structure span that ends after a.
	i := sort.Search(len(structure), func(i int) bool { return structure[i].off+structure[i].n > a })
	p := a
	for ; p < b && i < len(structure) && structure[i].off < b; i++ {
		s := structure[i]
		if s.off > p {
			if err := emit(p, s.off); err != nil {
				return nil, gaps, err
			}
			p = s.off
		}
		end := min(s.off+s.n, b)
		if end > p {
			segs = append(segs, formats.Segment{Off: p, Len: end - p})
			p = end
		}
	}
	if p < b {
		if err := emit(p, b); err != nil {
			return nil, gaps, err
		}
	}
	return segs, gaps, nil
}

// mergeSpans sorts spans and merges overlapping or touching ones.
func mergeSpans(in []span) []span {
	s := append([]span(nil), in...)
	sort.Slice(s, func(i, j int) bool { return s[i].off < s[j].off })
	var out []span
	for _, x := range s {
		if x.n <= 0 {
			continue
		}
		if n := len(out); n > 0 && x.off <= out[n-1].off+out[n-1].n {
			out[n-1].n = max(out[n-1].n, x.off+x.n-out[n-1].off)
			continue
		}
		out = append(out, x)
	}
	return out
}

var compressionNames = map[uint64]string{
	1: "none", 2: "ccittrle", 3: "ccittfax3", 4: "ccittfax4", 5: "lzw", 6: "ojpeg", 7: "jpeg",
	8: "deflate", 32946: "deflate", 32773: "packbits", 34712: "jpeg2000", 34887: "lerc",
	34925: "lzma", 50000: "zstd", 50001: "webp", 50002: "jxl", 52546: "jxl",
}

func compressionName(c uint64) string {
	if n, ok := compressionNames[c]; ok {
		return n
	}
	return fmt.Sprintf("code%d", c)
}

func dtype(bits, format uint64) string {
	kind := map[uint64]string{1: "uint", 2: "int", 3: "float", 5: "cint", 6: "cfloat"}[format]
	if kind == "" {
		kind = "void"
	}
	if bits == 1 {
		return "bit1"
	}
	return kind + strconv.FormatUint(bits, 10)
}

// summary describes the file for the manifest header; every value is one
// line and depends only on the file's bytes.
func summary(rd *reader, ims []*image, ghost []string, blocks []block) []formats.Field {
	var f []formats.Field
	add := func(k, v string) { f = append(f, formats.Field{Name: k, Value: v}) }
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	var im0 *image
	ovr, masks, pages := 0, 0, 0
	for _, im := range ims {
		if !im.hasGrid {
			continue
		}
		if im0 == nil {
			im0 = im
		}
		switch {
		case im.base != im0:
			if im.base == im {
				pages++
			}
		case im.mask:
			masks++
		case im != im0:
			ovr++
		}
	}
	add("cog", yes(isCOG(rd, ims, ghost, blocks)))
	if rd.bo == binary.ByteOrder(binary.LittleEndian) {
		add("byteorder", "little")
	} else {
		add("byteorder", "big")
	}
	add("bigtiff", yes(rd.big))
	if im0 == nil {
		add("images", "0")
		return f
	}
	add("width", strconv.FormatUint(im0.w, 10))
	add("height", strconv.FormatUint(im0.h, 10))
	add("bands", strconv.FormatUint(im0.spp, 10))
	add("dtype", dtype(im0.bits, im0.sampleFm))
	if im0.tiled {
		add("tile", fmt.Sprintf("%dx%d", im0.bw, im0.bh))
	} else {
		add("tile", fmt.Sprintf("strips rps=%d", im0.bh))
	}
	if im0.planes > 1 {
		add("interleave", "band")
	} else {
		add("interleave", "pixel")
	}
	add("compression", compressionName(im0.compression))
	add("predictor", strconv.FormatUint(im0.predictor, 10))
	add("overviews", strconv.Itoa(ovr))
	add("masks", strconv.Itoa(masks))
	if pages > 0 {
		add("pages", strconv.Itoa(pages+1))
	}
	if n := sparse(ims); n > 0 {
		add("sparse", strconv.Itoa(n))
	}
	if im0.g.crs != "" {
		add("crs", im0.g.crs)
	}
	if b := im0.g.bbox(0, 0, float64(im0.w), float64(im0.h), 1, 1); b != nil {
		add("bbox", formats.SummaryBBox(*b))
	}
	if len(ghost) > 0 {
		g := strings.Join(ghost, " ")
		if len(g) > 400 {
			g = g[:400]
		}
		add("ghost", g)
	}
	return f
}

// sparse counts the blocks stored as offset 0 / byte count 0.
func sparse(ims []*image) int {
	n := 0
	for _, im := range ims {
		for i := range im.offsets {
			if im.offsets[i] == 0 || im.counts[i] == 0 {
				n++
			}
		}
	}
	return n
}

// isCOG reports whether the file is laid out as a cloud-optimized GeoTIFF:
// GDAL's ghost header says so (IFDS_BEFORE_DATA and not edited
// incompatibly), or, without one, the file is tiled, every directory byte
// comes before the first tile and the full-resolution tiles come last.
func isCOG(rd *reader, ims []*image, ghost []string, blocks []block) bool {
	var im0 *image
	for _, im := range ims {
		if im.hasGrid {
			im0 = im
			break
		}
	}
	if im0 == nil || !im0.tiled {
		return false
	}
	if len(ghost) > 0 {
		has := func(s string) bool {
			for _, g := range ghost {
				if g == s {
					return true
				}
			}
			return false
		}
		return has("LAYOUT=IFDS_BEFORE_DATA") && !has("KNOWN_INCOMPATIBLE_EDITION=YES")
	}
	var ifdEnd int64
	for _, im := range ims {
		ifdEnd = max(ifdEnd, im.d.off)
	}
	firstData, lastData := rd.size, int64(-1)
	var lastKey string
	for _, b := range blocks {
		if b.off < firstData {
			firstData = b.off
		}
		if b.off > lastData {
			lastData, lastKey = b.off, b.key
		}
	}
	return ifdEnd < firstData && (strings.HasPrefix(lastKey, "z0/") || strings.HasPrefix(lastKey, "mask/z0/"))
}

// Profile is the encoding profile of a TIFF layout: tile size,
// compression, predictor, interleave and overview count, e.g.
// "tile=256x256 compression=deflate predictor=2 interleave=pixel overviews=3".
// A change between commits means the raster was re-encoded, so almost
// every tile is expected to change. Empty for a non-TIFF layout.
func Profile(l *formats.Layout) string {
	if l == nil || l.Format != "tiff" {
		return ""
	}
	var b bytes.Buffer
	for _, name := range []string{"tile", "compression", "predictor", "interleave", "overviews"} {
		for _, f := range l.Summary {
			if f.Name == name {
				if b.Len() > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(name + "=" + f.Value)
			}
		}
	}
	return b.String()
}
