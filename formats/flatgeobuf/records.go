package flatgeobuf

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// Schema is what decoding feature records needs of a FlatGeobuf header.
type Schema struct {
	Columns  []string // property columns, in header order
	types    []uint8
	geomType uint8
	hasZ     bool
	// Records is the offset of the first feature record; they run to
	// the end of the file.
	Records int64
}

// ReadSchema reads the header of the FlatGeobuf file r (size bytes).
func ReadSchema(r io.ReaderAt, size int64) (*Schema, error) {
	f, err := parseHead(r, size)
	if err != nil {
		return nil, err
	}
	s := &Schema{types: f.h.colTypes, geomType: f.h.geomType, hasZ: f.h.hasZ, Records: f.featOff}
	for _, c := range f.h.columns {
		s.Columns = append(s.Columns, string(c))
	}
	return s, nil
}

// Column types of the FlatGeobuf schema (ColumnType).
const (
	colByte = iota
	colUByte
	colBool
	colShort
	colUShort
	colInt
	colUInt
	colLong
	colULong
	colFloat
	colDouble
	colString
	colJSON
	colDateTime
	colBinary
)

// Decode reads the length-prefixed feature records b holds (whole ones,
// back to back) and calls visit with each one's offset in b, its property
// values by Columns (nil where absent: int64, uint64, float64, bool,
// string or []byte) and its geometry as ISO WKB (nil when it has none or
// a kind WKB lacks); both slices are visit's to keep.
func (s *Schema) Decode(b []byte, visit func(off int, values []any, wkb []byte) error) error {
	for at := 0; at < len(b); {
		if len(b)-at < 4 {
			return fmt.Errorf("flatgeobuf: %d trailing bytes at %d are not a feature record", len(b)-at, at)
		}
		n := int(binary.LittleEndian.Uint32(b[at:]))
		if n < 4 || n > len(b)-at-4 {
			return fmt.Errorf("flatgeobuf: feature record at %d has length %d, %d bytes left", at, n, len(b)-at-4)
		}
		rec := b[at+4 : at+4+n]
		t, err := root(rec)
		if err != nil {
			return fmt.Errorf("flatgeobuf: feature record at %d: %w", at, err)
		}
		vals, err := s.properties(t)
		if err != nil {
			return fmt.Errorf("flatgeobuf: feature record at %d: %w", at, err)
		}
		var wkb []byte
		if g, ok, err := t.sub(0); err == nil && ok {
			w := wkbWriter{hasZ: s.hasZ, nodes: len(rec)/4 + 1}
			if w.geometry(g, s.geomType, 0) == nil {
				wkb = w.b
			}
		}
		if err := visit(at, vals, wkb); err != nil {
			return err
		}
		at += 4 + n
	}
	return nil
}

// properties decodes a Feature's properties vector: (u16 column, value)
// pairs, values little-endian, strings and blobs u32-length-prefixed.
func (s *Schema) properties(t table) ([]any, error) {
	vals := make([]any, len(s.Columns))
	err := s.eachProperty(t, func(c int, typ uint8, v []byte) {
		switch {
		case typ < colString:
			vals[c] = fixedValue(typ, v)
		case typ == colBinary:
			vals[c] = append([]byte(nil), v...)
		default:
			vals[c] = string(v)
		}
	})
	if err != nil {
		return nil, err
	}
	return vals, nil
}

// eachProperty calls fn with each property of a Feature: its column, the
// column's type and the value's bytes (a string's or blob's without
// their length), which are fn's only during the call.
func (s *Schema) eachProperty(t table, fn func(c int, typ uint8, v []byte)) error {
	p, err := t.bytes(1)
	if err != nil {
		return err
	}
	fixed := [...]int{colByte: 1, colUByte: 1, colBool: 1, colShort: 2, colUShort: 2, colInt: 4,
		colUInt: 4, colLong: 8, colULong: 8, colFloat: 4, colDouble: 8}
	for len(p) > 0 {
		if len(p) < 2 {
			return errBuf
		}
		c := int(binary.LittleEndian.Uint16(p))
		p = p[2:]
		if c >= len(s.types) {
			return fmt.Errorf("property of column %d, header has %d", c, len(s.types))
		}
		typ := s.types[c]
		if int(typ) < len(fixed) {
			n := fixed[typ]
			if len(p) < n {
				return errBuf
			}
			fn(c, typ, p[:n])
			p = p[n:]
			continue
		}
		if typ > colBinary || len(p) < 4 {
			return fmt.Errorf("column %d: type %d: %w", c, typ, errBuf)
		}
		n := binary.LittleEndian.Uint32(p)
		if uint64(n) > uint64(len(p)-4) {
			return errBuf
		}
		fn(c, typ, p[4:4+n])
		p = p[4+n:]
	}
	return nil
}

func fixedValue(typ uint8, b []byte) any {
	le := binary.LittleEndian
	switch typ {
	case colByte:
		return int64(int8(b[0]))
	case colUByte:
		return int64(b[0])
	case colBool:
		return b[0] != 0
	case colShort:
		return int64(int16(le.Uint16(b)))
	case colUShort:
		return int64(le.Uint16(b))
	case colInt:
		return int64(int32(le.Uint32(b)))
	case colUInt:
		return int64(le.Uint32(b))
	case colLong:
		return int64(le.Uint64(b))
	case colULong:
		return le.Uint64(b)
	case colFloat:
		return float64(math.Float32frombits(le.Uint32(b)))
	}
	return math.Float64frombits(le.Uint64(b))
}

// FlatGeobuf geometry types that have a WKB spelling (GeometryType).
const (
	geoUnknown = iota
	geoPoint
	geoLineString
	geoPolygon
	geoMultiPoint
	geoMultiLineString
	geoMultiPolygon
	geoCollection
)

// wkbWriter spells a FlatGeobuf Geometry table as ISO WKB.
type wkbWriter struct {
	b     []byte
	hasZ  bool
	nodes int // tables left to visit (a hostile DAG must not loop long)
}

func (w *wkbWriter) u32(v uint32) { w.b = binary.LittleEndian.AppendUint32(w.b, v) }

func (w *wkbWriter) f64(v float64) {
	w.b = binary.LittleEndian.AppendUint64(w.b, math.Float64bits(v))
}

func (w *wkbWriter) head(typ uint8) {
	w.b = append(w.b, 1)
	code := uint32(typ)
	if w.hasZ {
		code += 1000
	}
	w.u32(code)
}

// geometry appends g (of type typ; Unknown = g's own type field).
func (w *wkbWriter) geometry(g table, typ uint8, depth int) error {
	if w.nodes--; w.nodes < 0 || depth > maxDepth {
		return errBuf
	}
	if typ == geoUnknown {
		var err error
		if typ, err = g.uint8(6, 0); err != nil {
			return err
		}
	}
	xy, err := g.float64s(1)
	if err != nil {
		return err
	}
	z, err := g.float64s(2)
	if err != nil {
		return err
	}
	if w.hasZ && z.len() != xy.len()/2 {
		return errBuf
	}
	pt := func(i int) {
		w.f64(xy.at(2 * i))
		w.f64(xy.at(2*i + 1))
		if w.hasZ {
			w.f64(z.at(i))
		}
	}
	n := xy.len() / 2
	ends, err := g.ends(n)
	if err != nil {
		return err
	}
	switch typ {
	case geoPoint:
		w.head(geoPoint)
		if n == 0 {
			w.f64(math.NaN())
			w.f64(math.NaN())
			if w.hasZ {
				w.f64(math.NaN())
			}
			return nil
		}
		pt(0)
	case geoLineString:
		w.head(geoLineString)
		w.u32(uint32(n))
		for i := range n {
			pt(i)
		}
	case geoMultiPoint:
		w.head(geoMultiPoint)
		w.u32(uint32(n))
		for i := range n {
			w.head(geoPoint)
			pt(i)
		}
	case geoPolygon, geoMultiLineString:
		w.head(typ)
		w.u32(uint32(len(ends)))
		start := 0
		for _, e := range ends {
			if typ == geoMultiLineString {
				w.head(geoLineString)
			}
			w.u32(uint32(e - start))
			for i := start; i < e; i++ {
				pt(i)
			}
			start = e
		}
	case geoMultiPolygon, geoCollection:
		w.head(typ)
		at := len(w.b)
		w.u32(0)
		count := uint32(0)
		part := uint8(geoPolygon)
		if typ == geoCollection {
			part = geoUnknown
		}
		err := g.tables(7, func(p table) error {
			count++
			return w.geometry(p, part, depth+1)
		})
		if err != nil {
			return err
		}
		binary.LittleEndian.PutUint32(w.b[at:], count)
	default:
		return fmt.Errorf("geometry type %d has no WKB spelling here", typ)
	}
	return nil
}

// ends reads Geometry.ends (the end point index of each ring or line) for
// n points; absent, one part holds them all. Ends must rise within n.
func (t table) ends(n int) ([]int, error) {
	s, k, err := t.vector(0, 4)
	if err != nil {
		return nil, err
	}
	if k == 0 && n == 0 {
		return nil, nil
	}
	if k == 0 {
		return []int{n}, nil
	}
	out := make([]int, 0, k)
	last := 0
	for i := range uint64(k) {
		e, _ := u32(t.b, s+4*i)
		if int(e) < last || int(e) > n {
			return nil, errBuf
		}
		out = append(out, int(e))
		last = int(e)
	}
	return out, nil
}

// KeyKind reports whether column name is an integer or string column,
// the kinds a feature key may have.
func (s *Schema) KeyKind(name string) bool {
	for i, c := range s.Columns {
		if c == name {
			t := s.types[i]
			return t <= colULong && t != colBool || t == colString
		}
	}
	return false
}
