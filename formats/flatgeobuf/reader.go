package flatgeobuf

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"

	"github.com/chunkvc/chunkvc/geom"
	"github.com/chunkvc/chunkvc/hashing"
	"golang.org/x/sync/errgroup"
)

const (
	magicLen = 8
	// MaxHeader caps the header flatbuffer length before it is allocated.
	MaxHeader = 64 << 20
	// maxCount is the largest features_count the index formula accepts.
	maxCount = 1 << 56
	// maxDepth bounds Geometry.parts nesting.
	maxDepth = 64
	window   = 1 << 20
)

// Feature is one feature record of a FlatGeobuf file.
type Feature struct {
	// ID is the BLAKE3 hash of the feature flatbuffer (the record without
	// its 4-byte length prefix). Records are position-independent, so a
	// feature keeps its ID wherever it moves in the file.
	ID hashing.ID
	// BBox is the union of all xy of the geometry, parts included; a
	// feature without coordinates has the empty box (+Inf,+Inf,-Inf,-Inf).
	BBox geom.BBox
	// Off and Len are the record's byte range in the file, prefix included.
	Off, Len int64
}

// Empty reports whether f has no coordinates.
func (f Feature) Empty() bool { return !(f.BBox.MinX <= f.BBox.MaxX && f.BBox.MinY <= f.BBox.MaxY) }

// header is what the adapter reads from the Header table.
type header struct {
	name      []byte
	envelope  []float64
	geomType  uint8
	hasZ      bool
	hasM      bool
	hasT      bool
	hasTM     bool
	columns   [][]byte
	colTypes  []uint8
	count     uint64
	nodeSize  uint16
	crs       string
	headerLen int64
}

// file is a parsed FlatGeobuf file: its header, where its parts are, and,
// once walked, what its records hold.
type file struct {
	h                  *header
	indexOff, indexLen int64 // indexLen 0: no index
	featOff            int64
	n                  int       // records walked
	env                geom.BBox // union of their bboxes
	feats              []Feature // the records, when parse keeps them
	rec                []byte    // during walk's visit: the record's flatbuffer
}

// Features lists the feature records of the FlatGeobuf file r (size
// bytes) in file order, for a set difference between two versions.
func Features(r io.ReaderAt, size int64) ([]Feature, error) {
	f, err := parse(context.Background(), r, size)
	if err != nil {
		return nil, err
	}
	return f.feats, nil
}

// isMagic reports whether b starts with "fgb" 3 "fgb" and any patch byte.
func isMagic(b []byte) bool {
	return len(b) >= magicLen && b[0] == 'f' && b[1] == 'g' && b[2] == 'b' && b[3] == 3 &&
		b[4] == 'f' && b[5] == 'g' && b[6] == 'b'
}

// parse reads the magic, header, index extent and every feature record,
// and keeps the records. A commit walks them instead (layout), holding none.
func parse(ctx context.Context, r io.ReaderAt, size int64) (*file, error) {
	f, err := parseHead(r, size)
	if err != nil {
		return nil, err
	}
	// Every record takes at least 8 bytes, which bounds the preallocation.
	f.feats = make([]Feature, 0, min(f.h.count, uint64(size-f.featOff)/8))
	err = f.walk(ctx, r, size, true, func(ft *Feature) error {
		f.feats = append(f.feats, *ft)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// parseHead reads the magic, the header and where the index and the
// records are.
func parseHead(r io.ReaderAt, size int64) (*file, error) {
	var pre [magicLen + 4]byte
	if size < int64(len(pre)) {
		return nil, fmt.Errorf("flatgeobuf: %d bytes is too short for a header", size)
	}
	if err := readAt(r, pre[:], 0); err != nil {
		return nil, err
	}
	if !isMagic(pre[:]) {
		return nil, errors.New("flatgeobuf: no fgb v3 magic")
	}
	hlen := int64(binary.LittleEndian.Uint32(pre[magicLen:]))
	if hlen > MaxHeader || hlen > size-int64(len(pre)) {
		return nil, fmt.Errorf("flatgeobuf: header length %d exceeds the file (%d bytes) or the %d-byte cap", hlen, size, MaxHeader)
	}
	hb := make([]byte, hlen)
	if err := readAt(r, hb, int64(len(pre))); err != nil {
		return nil, err
	}
	h, err := parseHeader(hb)
	if err != nil {
		return nil, fmt.Errorf("flatgeobuf: header: %w", err)
	}
	f := &file{h: h, indexOff: int64(len(pre)) + hlen}
	f.featOff = f.indexOff
	if h.nodeSize > 0 && h.count > 0 {
		n, err := IndexSize(h.count, h.nodeSize)
		if err != nil {
			return nil, err
		}
		if n > size-f.indexOff {
			return nil, fmt.Errorf("flatgeobuf: index of %d features needs %d bytes, only %d left", h.count, n, size-f.indexOff)
		}
		f.indexLen = n
		f.featOff += n
	}
	return f, nil
}

func readAt(r io.ReaderAt, b []byte, off int64) error {
	n, err := r.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("flatgeobuf: read %d bytes at %d: %w", len(b), off, err)
}

func parseHeader(b []byte) (*header, error) {
	t, err := root(b)
	if err != nil {
		return nil, err
	}
	h := &header{headerLen: int64(len(b))}
	if h.name, err = t.bytes(0); err != nil {
		return nil, err
	}
	env, err := t.float64s(1)
	if err != nil {
		return nil, err
	}
	for i := 0; i < env.len() && i < 8; i++ {
		h.envelope = append(h.envelope, env.at(i))
	}
	if h.geomType, err = t.uint8(2, 0); err != nil {
		return nil, err
	}
	flags := []*bool{&h.hasZ, &h.hasM, &h.hasT, &h.hasTM}
	for i, p := range flags {
		if *p, err = t.bool(3 + i); err != nil {
			return nil, err
		}
	}
	err = t.tables(7, func(c table) error {
		name, err := c.bytes(0)
		h.columns = append(h.columns, name)
		if err != nil {
			return err
		}
		typ, err := c.uint8(1, 0)
		h.colTypes = append(h.colTypes, typ)
		return err
	})
	if err != nil {
		return nil, err
	}
	if h.count, err = t.uint64(8); err != nil {
		return nil, err
	}
	if h.nodeSize, err = t.uint16(9, 16); err != nil {
		return nil, err
	}
	crs, ok, err := t.sub(10)
	if err != nil {
		return nil, err
	}
	if ok {
		if h.crs, err = crsName(crs); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// crsName spells a Crs table as "ORG:code" (org defaults to EPSG), or
// "user-defined" when only a WKT or name is given.
func crsName(c table) (string, error) {
	org, err := c.bytes(0)
	if err != nil {
		return "", err
	}
	code, err := c.int32(1)
	if err != nil {
		return "", err
	}
	codeStr, err := c.bytes(5)
	if err != nil {
		return "", err
	}
	wkt, err := c.bytes(4)
	if err != nil {
		return "", err
	}
	name, err := c.bytes(2)
	if err != nil {
		return "", err
	}
	if len(org) == 0 {
		org = []byte("EPSG")
	}
	switch {
	case code != 0:
		return fmt.Sprintf("%s:%d", sanitize(org, 32), code), nil
	case len(codeStr) > 0:
		return sanitize(org, 32) + ":" + sanitize(codeStr, 64), nil
	case len(wkt) > 0 || len(name) > 0:
		return "user-defined", nil
	}
	return "", nil
}

// Segments of the record area that walk reads at once: at most
// segmentBytes (more for a record larger than that) and segmentRecords.
const (
	segmentBytes   = 1 << 20
	segmentRecords = 8192
)

// walk reads the size-prefixed feature records from f.featOff to size and
// calls visit for each in file order (the Feature, and the record's bytes
// in f.rec, are only valid during the call), counting them in f.n and their bboxes in f.env. With ids, the
// records' hashes are set. The records are read a segment at a time; the
// workers measure (and hash: SumMany fills BLAKE3's 16 lanes with 16
// records at a time) a share of each segment's records, then visit runs on
// the caller's goroutine. Errors are those of the first bad record in file
// order, as a sequential walk would meet it.
func (f *file) walk(ctx context.Context, r io.ReaderAt, size int64, ids bool, visit func(*Feature) error) error {
	workers := min(runtime.GOMAXPROCS(0), 4)
	var (
		buf   []byte
		feats []Feature
		data  [][]byte // each record's flatbuffer, in buf
		idbuf []hashing.ID
	)
	f.n, f.env = 0, geom.Empty
	for pos := f.featOff; pos < size; {
		if err := ctx.Err(); err != nil {
			return err
		}
		if size-pos < 4 {
			return fmt.Errorf("flatgeobuf: %d trailing bytes at %d are not a feature record", size-pos, pos)
		}
		m := min(segmentBytes, size-pos)
		buf = grow(buf, m)
		if err := readAt(r, buf[:m], pos); err != nil {
			return err
		}
		if n := int64(binary.LittleEndian.Uint32(buf)); n >= 4 && n <= size-pos-4 && 4+n > m {
			m = 4 + n // a record larger than a segment: read it whole
			buf = grow(buf, m)
			if err := readAt(r, buf[:m], pos); err != nil {
				return err
			}
		}
		// Cut the segment into records; a bad length or trailing bytes are
		// reported once the records before them are done.
		feats, data = feats[:0], data[:0]
		var at int64
		var later error
		for len(feats) < segmentRecords && at+4 <= m {
			n := int64(binary.LittleEndian.Uint32(buf[at:]))
			if n < 4 || n > size-pos-at-4 {
				later = fmt.Errorf("flatgeobuf: feature record at %d has length %d (file has %d bytes)", pos+at, n, size)
				break
			}
			if at+4+n > m {
				break
			}
			feats = append(feats, Feature{Off: pos + at, Len: n + 4})
			data = append(data, buf[at+4:at+4+n])
			at += 4 + n
		}
		if later == nil && at < m && at+4 > m && pos+m == size {
			later = fmt.Errorf("flatgeobuf: %d trailing bytes at %d are not a feature record", m-at, pos+at)
		}
		if ids {
			idbuf = slices.Grow(idbuf[:0], len(data))[:len(data)]
		}
		if err := f.measure(feats, data, idbuf, workers); err != nil {
			return err
		}
		for i := range feats {
			ft := &feats[i]
			if ids {
				ft.ID = idbuf[i]
			}
			if !ft.Empty() {
				unionf(&f.env, ft.BBox)
			}
			f.n++
			f.rec = data[i]
			if err := visit(ft); err != nil {
				return err
			}
		}
		if later != nil {
			return later
		}
		pos += at
	}
	if f.h.count > 0 && uint64(f.n) != f.h.count {
		return fmt.Errorf("flatgeobuf: header says %d features, file holds %d records", f.h.count, f.n)
	}
	return nil
}

// measure sets the BBox of feats[i] from data[i] and, when ids is not
// empty, ids[i] to its hash, in workers contiguous shares; the error is
// that of the first bad record.
func (f *file) measure(feats []Feature, data [][]byte, ids []hashing.ID, workers int) error {
	share := func(lo, hi int) (int, error) {
		for i := lo; i < hi; i++ {
			bb, err := featureBBox(data[i])
			if err != nil {
				return i, err
			}
			feats[i].BBox = bb
		}
		if len(ids) > 0 {
			hashing.SumMany(data[lo:hi], ids[lo:hi])
		}
		return hi, nil
	}
	if len(feats) < 256 {
		workers = 1
	}
	bad, errs := make([]int, workers), make([]error, workers)
	var g errgroup.Group
	for w := range workers {
		lo, hi := len(feats)*w/workers, len(feats)*(w+1)/workers
		if w == workers-1 {
			bad[w], errs[w] = share(lo, hi) // on the caller's goroutine
			continue
		}
		g.Go(func() error {
			bad[w], errs[w] = share(lo, hi)
			return nil
		})
	}
	_ = g.Wait()
	for w, err := range errs { // shares are in file order
		if err != nil {
			return fmt.Errorf("flatgeobuf: feature %d at %d: %w", f.n+bad[w], feats[bad[w]].Off, err)
		}
	}
	return nil
}

// grow returns b with room for n bytes.
func grow(b []byte, n int64) []byte {
	if int64(cap(b)) < n {
		return make([]byte, n)
	}
	return b[:n]
}

// featureBBox reads a Feature flatbuffer's geometry extent.
func featureBBox(b []byte) (geom.BBox, error) {
	bb := geom.Empty
	t, err := root(b)
	if err != nil {
		return bb, err
	}
	g, ok, err := t.sub(0)
	if err != nil || !ok {
		return bb, err
	}
	// A tree of distinct tables visits at most len/4 geometries and reads
	// at most len/8 doubles; shared sub-tables (a DAG) must not do more.
	bud := budget{nodes: len(b)/4 + 1, coords: len(b)/8 + 1}
	err = geomBBox(g, &bb, 0, &bud)
	return bb, err
}

type budget struct{ nodes, coords int }

// geomBBox extends bb by the xy of g and its parts.
func geomBBox(g table, bb *geom.BBox, depth int, bud *budget) error {
	if bud.nodes--; bud.nodes < 0 || depth > maxDepth {
		return errBuf
	}
	xy, err := g.float64s(1)
	if err != nil {
		return err
	}
	if bud.coords -= xy.len(); bud.coords < 0 {
		return errBuf
	}
	for i := 0; i+1 < xy.len(); i += 2 {
		extendf(bb, xy.at(i), xy.at(i+1))
	}
	return g.tables(7, func(p table) error { return geomBBox(p, bb, depth+1, bud) })
}

// extendf grows b to hold (x, y) and unionf to hold o, coordinate by
// coordinate, skipping NaN (a point with no x or y): unlike geom's Extend
// and Union, which let a NaN through.
func extendf(b *geom.BBox, x, y float64) {
	b.MinX, b.MinY = minf(b.MinX, x), minf(b.MinY, y)
	b.MaxX, b.MaxY = maxf(b.MaxX, x), maxf(b.MaxY, y)
}

func unionf(b *geom.BBox, o geom.BBox) {
	b.MinX, b.MinY = minf(b.MinX, o.MinX), minf(b.MinY, o.MinY)
	b.MaxX, b.MaxY = maxf(b.MaxX, o.MaxX), maxf(b.MaxY, o.MaxY)
}

// minf and maxf ignore NaN in x.
func minf(a, x float64) float64 {
	if x < a {
		return x
	}
	return a
}

func maxf(a, x float64) float64 {
	if x > a {
		return x
	}
	return a
}

// windowReader serves small reads from a buffered window of r. A read
// that goes on forward from the window (or starts it) fills a whole new
// window; one that jumps elsewhere reads only its own bytes, so that reads
// in an order of their own (a merge's records, Hilbert-sorted across two
// files) cost their bytes, not a window each.
type windowReader struct {
	r    io.ReaderAt
	size int64
	buf  []byte
	off  int64
}

// get returns n bytes at off; the slice is valid until the next call.
func (w *windowReader) get(off, n int64) ([]byte, error) {
	if off >= w.off && n <= int64(len(w.buf)) && off-w.off <= int64(len(w.buf))-n {
		return w.buf[off-w.off : off-w.off+n], nil
	}
	m := min(max(n, window), w.size-off)
	if end := w.off + int64(len(w.buf)); len(w.buf) > 0 && (off < w.off || off > end) {
		m = n // a jump
	}
	if int64(cap(w.buf)) < m {
		w.buf = make([]byte, m)
	}
	w.buf = w.buf[:m]
	if err := readAt(w.r, w.buf, off); err != nil {
		w.buf = w.buf[:0]
		return nil, err
	}
	w.off = off
	return w.buf[:n], nil
}
