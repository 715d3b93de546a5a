package tiff

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// Parser limits (FORMATS.md §1.5). Every count read from the file is
// checked against these and against the file size before anything is
// allocated.
const (
	maxIFDs    = 10000
	maxEntries = 4096
	maxArray   = 1 << 28
	maxDim     = 1 << 31
	maxGhost   = 1 << 20
	// maxSkeletonValue: a tag value longer than this (a giant XMP packet,
	// ICC profile or private blob) is not skeleton; if nothing else
	// references its bytes they are chunked as a gap. Block offset and
	// byte-count arrays are always skeleton.
	maxSkeletonValue = 1 << 20
	classicHeader    = 8
	bigHeader        = 16
)

// Tags the adapter reads.
const (
	tagNewSubfileType   = 254
	tagSubfileType      = 255
	tagImageWidth       = 256
	tagImageLength      = 257
	tagBitsPerSample    = 258
	tagCompression      = 259
	tagPhotometric      = 262
	tagStripOffsets     = 273
	tagSamplesPerPixel  = 277
	tagRowsPerStrip     = 278
	tagStripByteCounts  = 279
	tagPlanarConfig     = 284
	tagPredictor        = 317
	tagTileWidth        = 322
	tagTileLength       = 323
	tagTileOffsets      = 324
	tagTileByteCounts   = 325
	tagSubIFDs          = 330
	tagSampleFormat     = 339
	tagJPEGTables       = 347
	tagModelPixelScale  = 33550
	tagModelTiepoint    = 33922
	tagModelTransform   = 34264
	tagGeoKeyDirectory  = 34735
	tagGDALNoData       = 42113
	typeASCII           = 2
	typeShort           = 3
	typeLong            = 4
	typeDouble          = 12
	typeLong8           = 16
	subfileReduced      = 1
	subfileMask         = 4
	defaultRowsPerStrip = math.MaxUint32
)

var errBudget = errors.New("too many IFD entries or array elements for the file size")

// typeSize is the byte size of one value of a TIFF field type, 0 if unknown.
func typeSize(t uint16) int64 {
	switch t {
	case 1, 2, 6, 7:
		return 1
	case 3, 8:
		return 2
	case 4, 9, 11, 13:
		return 4
	case 5, 10, 12, 16, 17, 18:
		return 8
	}
	return 0
}

// span is a byte range [off, off+n) of the file.
type span struct{ off, n int64 }

// entry is one IFD entry; val holds the value bytes when they fit in the
// entry, otherwise off points at them.
type entry struct {
	tag, typ uint16
	count    uint64
	off      int64 // absolute offset of the value bytes
}

// ifd is one parsed image file directory.
type ifd struct {
	index   int
	off     int64
	entries []entry
}

// reader is a bounded TIFF/BigTIFF directory reader over an io.ReaderAt.
type reader struct {
	r      io.ReaderAt
	size   int64
	bo     binary.ByteOrder
	big    bool
	budget int64 // IFD entries + array elements still allowed
	// structure collects every byte range the directory references
	// (header, IFDs, out-of-line tag values): skeleton, never "gap".
	structure []span
}

func newReader(r io.ReaderAt, size int64) (*reader, error) {
	var h [bigHeader]byte
	if size < classicHeader {
		return nil, fmt.Errorf("tiff: %d bytes is too short for a header", size)
	}
	n := int64(len(h))
	if size < n {
		n = size
	}
	if _, err := r.ReadAt(h[:n], 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("tiff: read header: %w", err)
	}
	rd := &reader{r: r, size: size, budget: size/2 + 4096}
	switch string(h[:2]) {
	case "II":
		rd.bo = binary.LittleEndian
	case "MM":
		rd.bo = binary.BigEndian
	default:
		return nil, errors.New("tiff: bad byte-order mark")
	}
	switch rd.bo.Uint16(h[2:]) {
	case 42:
		rd.structure = append(rd.structure, span{0, classicHeader})
	case 43:
		if n < bigHeader || rd.bo.Uint16(h[4:]) != 8 || rd.bo.Uint16(h[6:]) != 0 {
			return nil, errors.New("tiff: bad BigTIFF header")
		}
		rd.big = true
		rd.structure = append(rd.structure, span{0, bigHeader})
	default:
		return nil, errors.New("tiff: bad magic number")
	}
	return rd, nil
}

// inRange reports whether [off, off+n) lies inside the file, overflow-safe.
func (rd *reader) inRange(off, n int64) bool {
	return off >= 0 && n >= 0 && off <= rd.size && n <= rd.size-off
}

func (rd *reader) read(off, n int64) ([]byte, error) {
	if !rd.inRange(off, n) {
		return nil, fmt.Errorf("tiff: range %d+%d outside the %d-byte file", off, n, rd.size)
	}
	b := make([]byte, n)
	if _, err := rd.r.ReadAt(b, off); err != nil && !(errors.Is(err, io.EOF) && n > 0) {
		return nil, fmt.Errorf("tiff: read %d+%d: %w", off, n, err)
	}
	return b, nil
}

func (rd *reader) uint(b []byte) uint64 {
	if rd.big {
		return rd.bo.Uint64(b)
	}
	return uint64(rd.bo.Uint32(b))
}

// firstIFD returns the offset of the first IFD.
func (rd *reader) firstIFD() (uint64, error) {
	if rd.big {
		b, err := rd.read(8, 8)
		if err != nil {
			return 0, err
		}
		return rd.bo.Uint64(b), nil
	}
	b, err := rd.read(4, 4)
	if err != nil {
		return 0, err
	}
	return uint64(rd.bo.Uint32(b)), nil
}

// maxSubIFDDepth bounds how deep SubIFDs may nest (libtiff's writers
// nest one level: reduced resolutions and masks of a page).
const maxSubIFDDepth = 4

// ifds walks the main IFD chain and, after each IFD, the chains its
// SubIFDs tag (330) lists, as libtiff does: writers that keep reduced
// resolutions there (rather than in the main chain) list each one there.
// One visited set and one count limit cover every chain.
func (rd *reader) ifds(ctx context.Context) ([]*ifd, error) {
	next, err := rd.firstIFD()
	if err != nil {
		return nil, err
	}
	if next == 0 {
		return nil, errors.New("tiff: no IFD")
	}
	w := &ifdWalk{seen: map[uint64]bool{}}
	if err := rd.chain(ctx, w, next, 0); err != nil {
		return nil, err
	}
	return w.out, nil
}

// ifdWalk is the state of one walk over every IFD chain of a file.
type ifdWalk struct {
	seen map[uint64]bool
	out  []*ifd
}

// chain appends the IFDs of the chain starting at next, each followed by
// its SubIFDs; depth counts the SubIFD levels above the chain.
func (rd *reader) chain(ctx context.Context, w *ifdWalk, next uint64, depth int) error {
	for next != 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		if w.seen[next] {
			return fmt.Errorf("tiff: IFD chain loops back to offset %d", next)
		}
		if len(w.out) >= maxIFDs {
			return fmt.Errorf("tiff: more than %d IFDs", maxIFDs)
		}
		w.seen[next] = true
		if next > uint64(rd.size) {
			return fmt.Errorf("tiff: IFD %d at offset %d is past the end of the file", len(w.out), next)
		}
		d, nxt, err := rd.readIFD(int64(next), len(w.out))
		if err != nil {
			return err
		}
		w.out = append(w.out, d)
		subs, err := rd.uints(d, tagSubIFDs)
		if err != nil {
			return fmt.Errorf("tiff: IFD %d SubIFDs: %w", d.index, err)
		}
		if len(subs) > 0 && depth >= maxSubIFDDepth {
			return fmt.Errorf("tiff: IFD %d: SubIFDs nested deeper than %d", d.index, maxSubIFDDepth)
		}
		for _, sub := range subs {
			if sub == 0 {
				return fmt.Errorf("tiff: IFD %d lists a SubIFD at offset 0", d.index)
			}
			if err := rd.chain(ctx, w, sub, depth+1); err != nil {
				return err
			}
		}
		next = nxt
	}
	return nil
}

func (rd *reader) readIFD(off int64, index int) (*ifd, uint64, error) {
	cntSize, entSize, nextSize := int64(2), int64(12), int64(4)
	if rd.big {
		cntSize, entSize, nextSize = 8, 20, 8
	}
	b, err := rd.read(off, cntSize)
	if err != nil {
		return nil, 0, fmt.Errorf("IFD %d: %w", index, err)
	}
	var n uint64
	if rd.big {
		n = rd.bo.Uint64(b)
	} else {
		n = uint64(rd.bo.Uint16(b))
	}
	if n == 0 || n > maxEntries {
		return nil, 0, fmt.Errorf("tiff: IFD %d has %d entries", index, n)
	}
	if rd.budget -= int64(n); rd.budget < 0 {
		return nil, 0, errBudget
	}
	total := cntSize + int64(n)*entSize + nextSize
	b, err = rd.read(off, total)
	if err != nil {
		return nil, 0, fmt.Errorf("IFD %d: %w", index, err)
	}
	rd.structure = append(rd.structure, span{off, total})
	d := &ifd{index: index, off: off, entries: make([]entry, 0, n)}
	valSize := nextSize // the value field is as wide as an offset
	for i := int64(0); i < int64(n); i++ {
		e := b[cntSize+i*entSize:]
		en := entry{tag: rd.bo.Uint16(e), typ: rd.bo.Uint16(e[2:])}
		valAt := int64(8)
		if rd.big {
			en.count = rd.bo.Uint64(e[4:])
			valAt = 12
		} else {
			en.count = uint64(rd.bo.Uint32(e[4:]))
		}
		ts := typeSize(en.typ)
		if ts == 0 {
			continue // unknown type: skip the entry (its bytes stay inline)
		}
		if en.count > uint64(rd.size) || en.count*uint64(ts) > uint64(rd.size) {
			// Cannot be stored in the file; keep it out of everything.
			continue
		}
		if int64(en.count)*ts <= valSize {
			en.off = off + cntSize + i*entSize + valAt
		} else {
			vo := rd.uint(e[valAt:])
			if vo > uint64(rd.size) || !rd.inRange(int64(vo), int64(en.count)*ts) {
				en.off = -1 // out-of-line value outside the file
			} else {
				en.off = int64(vo)
				if n := int64(en.count) * ts; n <= maxSkeletonValue || isBlockArray(en.tag) {
					rd.structure = append(rd.structure, span{en.off, n})
				}
			}
		}
		d.entries = append(d.entries, en)
	}
	return d, rd.uint(b[total-nextSize:]), nil
}

func isBlockArray(tag uint16) bool {
	switch tag {
	case tagStripOffsets, tagStripByteCounts, tagTileOffsets, tagTileByteCounts:
		return true
	}
	return false
}

func (d *ifd) find(tag uint16) *entry {
	for i := range d.entries {
		if d.entries[i].tag == tag {
			return &d.entries[i]
		}
	}
	return nil
}

// uints reads an integer tag (BYTE, SHORT, LONG, LONG8 and signed kinds)
// as uint64s; nil, nil when the tag is absent.
func (rd *reader) uints(d *ifd, tag uint16) ([]uint64, error) {
	e := d.find(tag)
	if e == nil {
		return nil, nil
	}
	ts := typeSize(e.typ)
	switch e.typ {
	case 1, 3, 4, 6, 8, 9, 13, typeLong8, 17, 18:
	default:
		return nil, fmt.Errorf("tiff: IFD %d tag %d has non-integer type %d", d.index, tag, e.typ)
	}
	if e.off < 0 {
		return nil, fmt.Errorf("tiff: IFD %d tag %d values lie outside the file", d.index, tag)
	}
	if e.count > maxArray {
		return nil, fmt.Errorf("tiff: IFD %d tag %d has %d values", d.index, tag, e.count)
	}
	if rd.budget -= int64(e.count); rd.budget < 0 {
		return nil, errBudget
	}
	b, err := rd.read(e.off, int64(e.count)*ts)
	if err != nil {
		return nil, err
	}
	out := make([]uint64, e.count)
	for i := range out {
		switch ts {
		case 1:
			out[i] = uint64(b[i])
		case 2:
			out[i] = uint64(rd.bo.Uint16(b[2*i:]))
		case 4:
			out[i] = uint64(rd.bo.Uint32(b[4*i:]))
		default:
			out[i] = rd.bo.Uint64(b[8*i:])
		}
	}
	return out, nil
}

// uint1 reads the first value of an integer tag, def when absent or bad.
func (rd *reader) uint1(d *ifd, tag uint16, def uint64) uint64 {
	e := d.find(tag)
	if e == nil || e.count == 0 || e.count > 64 {
		return def
	}
	v, err := rd.uints(d, tag)
	if err != nil || len(v) == 0 {
		return def
	}
	return v[0]
}

// doubles reads a DOUBLE tag of at most max values; nil when absent or bad.
func (rd *reader) doubles(d *ifd, tag uint16, max uint64) []float64 {
	e := d.find(tag)
	if e == nil || e.typ != typeDouble || e.off < 0 || e.count == 0 || e.count > max {
		return nil
	}
	b, err := rd.read(e.off, int64(e.count)*8)
	if err != nil {
		return nil
	}
	out := make([]float64, e.count)
	for i := range out {
		out[i] = math.Float64frombits(rd.bo.Uint64(b[8*i:]))
	}
	return out
}

// ghost reads GDAL's structural metadata ("ghost area") right after the
// header: "GDAL_STRUCTURAL_METADATA_SIZE=%06d bytes\n" then that many bytes
// of KEY=VALUE lines. It returns the lines and marks the area as structure.
func (rd *reader) ghost() []string {
	const prefix = "GDAL_STRUCTURAL_METADATA_SIZE="
	start := int64(classicHeader)
	if rd.big {
		start = bigHeader
	}
	head, err := rd.read(start, min(int64(len(prefix))+13, rd.size-start))
	if err != nil || len(head) < len(prefix)+13 || string(head[:len(prefix)]) != prefix {
		return nil
	}
	var n int64
	for _, c := range head[len(prefix) : len(prefix)+6] {
		if c < '0' || c > '9' {
			return nil
		}
		n = n*10 + int64(c-'0')
	}
	if string(head[len(prefix)+6:]) != " bytes\n" || n > maxGhost {
		return nil
	}
	body, err := rd.read(start+int64(len(head)), n)
	if err != nil {
		return nil
	}
	rd.structure = append(rd.structure, span{start, int64(len(head)) + n})
	var lines []string
	line := []byte{}
	for _, c := range body {
		switch {
		case c == '\n':
			if len(line) > 0 {
				lines = append(lines, string(line))
			}
			line = line[:0]
		case c > ' ' && c <= '~':
			line = append(line, c)
		}
	}
	if len(line) > 0 {
		lines = append(lines, string(line))
	}
	return lines
}
