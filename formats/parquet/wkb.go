package parquet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/chunkvc/chunkvc/geom"
)

// WKB geometry types (ISO base codes; 15–17 are the ISO surfaces).
const (
	wkbPoint              = 1
	wkbLineString         = 2
	wkbPolygon            = 3
	wkbMultiPoint         = 4
	wkbMultiLineString    = 5
	wkbMultiPolygon       = 6
	wkbGeometryCollection = 7
	wkbPolyhedralSurface  = 15
	wkbTIN                = 16
	wkbTriangle           = 17
)

// EWKB (PostGIS) flags in the type word.
const (
	ewkbZ    = 0x80000000
	ewkbM    = 0x40000000
	ewkbSRID = 0x20000000
)

// wkbMaxDepth bounds the nesting of collections.
const wkbMaxDepth = 32

var errWKBTruncated = errors.New("wkb: truncated")

// extent is a running X/Y bounding box; NaN and infinite coordinates (empty
// points) are skipped.
type extent struct {
	minX, minY, maxX, maxY float64
	n                      int64 // coordinates added
}

func (e *extent) add(x, y float64) {
	if math.IsNaN(x) || math.IsNaN(y) || math.IsInf(x, 0) || math.IsInf(y, 0) {
		return
	}
	if e.n == 0 {
		e.minX, e.minY, e.maxX, e.maxY = x, y, x, y
	} else {
		e.minX, e.minY = min(e.minX, x), min(e.minY, y)
		e.maxX, e.maxY = max(e.maxX, x), max(e.maxY, y)
	}
	e.n++
}

// bbox is the extent, or nil when no coordinate was added.
func (e *extent) bbox() *geom.BBox {
	if e.n == 0 {
		return nil
	}
	return bboxIf(geom.BBox{MinX: e.minX, MinY: e.minY, MaxX: e.maxX, MaxY: e.maxY})
}

// wkbExtent reads one WKB geometry (ISO or EWKB: Z, M, ZM, SRID) from the
// start of b, adds its X/Y coordinates to e and returns the bytes it took.
// Every count is checked against the bytes left before it is used, so the
// work is linear in len(b) and nothing is allocated.
func wkbExtent(b []byte, e *extent) (int, error) {
	r := wkbReader{b: b, e: e}
	r.geometry(0)
	return r.pos, r.err
}

type wkbReader struct {
	b   []byte
	pos int
	le  bool
	err error
	e   *extent
}

func (r *wkbReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.pos = len(r.b)
}

func (r *wkbReader) left() int { return len(r.b) - r.pos }

func (r *wkbReader) u32() uint32 {
	if r.left() < 4 {
		r.fail(errWKBTruncated)
		return 0
	}
	p := r.b[r.pos : r.pos+4]
	r.pos += 4
	if r.le {
		return binary.LittleEndian.Uint32(p)
	}
	return binary.BigEndian.Uint32(p)
}

// count reads an element count and checks that n elements of at least
// each bytes fit in what is left.
func (r *wkbReader) count(each int) int {
	n := r.u32()
	if r.err == nil && uint64(n)*uint64(each) > uint64(r.left()) {
		r.fail(fmt.Errorf("wkb: %d elements of %d+ bytes with %d bytes left", n, each, r.left()))
		return 0
	}
	return int(n)
}

// points reads n coordinates of dims doubles each.
func (r *wkbReader) points(n, dims int) {
	size := 8 * dims
	if r.err != nil || n > r.left()/size {
		r.fail(errWKBTruncated)
		return
	}
	p := r.b[r.pos : r.pos+n*size]
	r.pos += n * size
	order := binary.ByteOrder(binary.BigEndian)
	if r.le {
		order = binary.LittleEndian
	}
	for i := 0; i < len(p); i += size {
		r.e.add(math.Float64frombits(order.Uint64(p[i:])), math.Float64frombits(order.Uint64(p[i+8:])))
	}
}

func (r *wkbReader) geometry(depth int) {
	if depth > wkbMaxDepth {
		r.fail(fmt.Errorf("wkb: collections nested deeper than %d", wkbMaxDepth))
		return
	}
	if r.left() < 1 {
		r.fail(errWKBTruncated)
		return
	}
	switch r.b[r.pos] {
	case 0:
		r.le = false
	case 1:
		r.le = true
	default:
		r.fail(fmt.Errorf("wkb: byte order %d", r.b[r.pos]))
		return
	}
	r.pos++
	t := r.u32()
	if r.err != nil {
		return
	}
	dims := 2
	if t&ewkbZ != 0 {
		dims++
	}
	if t&ewkbM != 0 {
		dims++
	}
	if t&ewkbSRID != 0 {
		r.u32()
	}
	t &^= ewkbZ | ewkbM | ewkbSRID
	base := t % 1000
	switch t / 1000 {
	case 0:
	case 1, 2: // Z or M
		dims++
	case 3: // ZM
		dims += 2
	default:
		r.fail(fmt.Errorf("wkb: geometry type %d", t))
		return
	}
	if dims > 4 {
		r.fail(fmt.Errorf("wkb: geometry type %d with EWKB flags", t))
		return
	}
	switch base {
	case wkbPoint:
		r.points(1, dims)
	case wkbLineString:
		r.points(r.count(8*dims), dims)
	case wkbPolygon, wkbTriangle:
		rings := r.count(4)
		for i := 0; i < rings && r.err == nil; i++ {
			r.points(r.count(8*dims), dims)
		}
	case wkbMultiPoint, wkbMultiLineString, wkbMultiPolygon, wkbGeometryCollection, wkbPolyhedralSurface, wkbTIN:
		// The smallest member is an empty one: order, type, count.
		n := r.count(9)
		for i := 0; i < n && r.err == nil; i++ {
			r.geometry(depth + 1)
		}
	default:
		r.fail(fmt.Errorf("wkb: geometry type %d", t))
	}
}
