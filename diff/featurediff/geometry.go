package featurediff

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Geometry is a GeoJSON geometry object (RFC 7946 §3.1). Coordinates hold
// positions ([]float64: x, y and z when the WKB had one; M is dropped)
// nested as the type wants; a GeometryCollection holds Geometries.
type Geometry struct {
	Type        string     `json:"type"`
	Coordinates any        `json:"coordinates,omitempty"`
	Geometries  []Geometry `json:"geometries,omitempty"`
}

// WKB geometry types (ISO codes modulo 1000).
var wkbTypes = [...]string{1: "Point", 2: "LineString", 3: "Polygon", 4: "MultiPoint",
	5: "MultiLineString", 6: "MultiPolygon", 7: "GeometryCollection"}

// maxWKBDepth bounds GeometryCollection nesting.
const maxWKBDepth = 32

// ParseWKB decodes ISO WKB or EWKB (Z, M, ZM, an SRID prefix) of the seven
// OGC types into a GeoJSON geometry.
func ParseWKB(b []byte) (*Geometry, error) {
	r := &wkb{b: b}
	g := r.geometry(0)
	if r.err != nil {
		return nil, fmt.Errorf("wkb at byte %d: %w", r.pos, r.err)
	}
	return &g, nil
}

type wkb struct {
	b   []byte
	pos int
	le  bool
	err error
}

var errShort = errors.New("truncated")

func (r *wkb) take(n int) []byte {
	if r.err != nil || n < 0 || len(r.b)-r.pos < n {
		if r.err == nil {
			r.err = errShort
		}
		return nil
	}
	p := r.b[r.pos : r.pos+n]
	r.pos += n
	return p
}

func (r *wkb) u32() uint32 {
	p := r.take(4)
	if p == nil {
		return 0
	}
	if r.le {
		return binary.LittleEndian.Uint32(p)
	}
	return binary.BigEndian.Uint32(p)
}

func (r *wkb) f64() float64 {
	p := r.take(8)
	if p == nil {
		return 0
	}
	if r.le {
		return math.Float64frombits(binary.LittleEndian.Uint64(p))
	}
	return math.Float64frombits(binary.BigEndian.Uint64(p))
}

// count reads a count of items of at least each bytes, bounded by what is
// left so that a hostile count allocates nothing.
func (r *wkb) count(each int) int {
	n := int(r.u32())
	if r.err == nil && n > (len(r.b)-r.pos)/each {
		r.err = fmt.Errorf("count %d exceeds the bytes left", n)
	}
	if r.err != nil {
		return 0
	}
	return n
}

// point reads one position; nil when a coordinate is not finite (POINT
// EMPTY is NaN NaN), which GeoJSON cannot spell.
func (r *wkb) point(dims int, hasZ bool) []float64 {
	p := make([]float64, 0, 3)
	finite := true
	for d := range dims {
		v := r.f64()
		if d < 2 || (d == 2 && hasZ) {
			p = append(p, v)
			finite = finite && !math.IsNaN(v) && !math.IsInf(v, 0)
		}
	}
	if !finite {
		return nil
	}
	return p
}

// points reads a position list, leaving out positions point drops.
func (r *wkb) points(dims int, hasZ bool) [][]float64 {
	n := r.count(8 * dims)
	out := make([][]float64, 0, n)
	for range n {
		if p := r.point(dims, hasZ); p != nil {
			out = append(out, p)
		}
	}
	return out
}

func (r *wkb) rings(dims int, hasZ bool) [][][]float64 {
	n := r.count(4)
	out := make([][][]float64, 0, n)
	for range n {
		out = append(out, r.points(dims, hasZ))
	}
	return out
}

func (r *wkb) geometry(depth int) Geometry {
	if depth > maxWKBDepth {
		r.err = errors.New("geometry collections nest too deep")
		return Geometry{}
	}
	bo := r.take(1)
	if bo == nil {
		return Geometry{}
	}
	r.le = bo[0] == 1
	t := r.u32()
	hasZ, hasM := t&0x80000000 != 0, t&0x40000000 != 0
	if t&0x20000000 != 0 {
		r.take(4) // EWKB SRID
	}
	t &= 0x0fffffff
	switch t / 1000 {
	case 1:
		hasZ = true
	case 2:
		hasM = true
	case 3:
		hasZ, hasM = true, true
	}
	code := int(t % 1000)
	if code < 1 || code >= len(wkbTypes) {
		r.err = fmt.Errorf("geometry type %d is not supported", t)
		return Geometry{}
	}
	dims := 2
	if hasZ {
		dims++
	}
	if hasM {
		dims++
	}
	g := Geometry{Type: wkbTypes[code]}
	switch code {
	case 1:
		p := r.point(dims, hasZ)
		if p == nil {
			p = []float64{}
		}
		g.Coordinates = p
	case 2:
		g.Coordinates = r.points(dims, hasZ)
	case 3:
		g.Coordinates = r.rings(dims, hasZ)
	default:
		n := r.count(5)
		parts := make([]Geometry, 0, n)
		for range n {
			parts = append(parts, r.geometry(depth+1))
		}
		if code == 7 {
			g.Geometries = parts
			if g.Geometries == nil {
				g.Geometries = []Geometry{}
			}
			break
		}
		coords := make([]any, 0, len(parts))
		for _, p := range parts {
			coords = append(coords, p.Coordinates)
		}
		g.Coordinates = coords
	}
	return g
}

// BBox is the extent of g's positions, nil when it has none.
func (g *Geometry) BBox() *[4]float64 {
	if g == nil {
		return nil
	}
	b := [4]float64{math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)}
	g.walk(func(p []float64) {
		if len(p) < 2 || math.IsNaN(p[0]) || math.IsNaN(p[1]) {
			return
		}
		b[0], b[1] = min(b[0], p[0]), min(b[1], p[1])
		b[2], b[3] = max(b[2], p[0]), max(b[3], p[1])
	})
	if b[0] > b[2] {
		return nil
	}
	return &b
}

func (g *Geometry) walk(fn func([]float64)) {
	for _, c := range g.Geometries {
		c.walk(fn)
	}
	walkCoords(g.Coordinates, fn)
}

func walkCoords(c any, fn func([]float64)) {
	switch v := c.(type) {
	case []float64:
		fn(v)
	case [][]float64:
		for _, p := range v {
			fn(p)
		}
	case [][][]float64:
		for _, p := range v {
			walkCoords(p, fn)
		}
	case []any:
		for _, p := range v {
			walkCoords(p, fn)
		}
	}
}

// WKT spells g as OGC Well-Known Text, e.g. "POINT (1 2)".
func (g *Geometry) WKT() string {
	if g == nil {
		return "NULL"
	}
	var b strings.Builder
	b.WriteString(strings.ToUpper(g.Type))
	if g.Type == "GeometryCollection" {
		if len(g.Geometries) == 0 {
			b.WriteString(" EMPTY")
			return b.String()
		}
		b.WriteString(" (")
		for i, c := range g.Geometries {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(c.WKT())
		}
		b.WriteByte(')')
		return b.String()
	}
	body := wktCoords(g.Coordinates)
	if body == "()" || body == "" {
		return b.String() + " EMPTY"
	}
	b.WriteByte(' ')
	if g.Type == "Point" {
		body = "(" + body + ")"
	}
	b.WriteString(body)
	return b.String()
}

func wktCoords(c any) string {
	switch v := c.(type) {
	case []float64:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = strconv.FormatFloat(x, 'f', -1, 64)
		}
		return strings.Join(parts, " ")
	case [][]float64:
		parts := make([]string, len(v))
		for i, p := range v {
			parts[i] = wktCoords(p)
		}
		return "(" + strings.Join(parts, ", ") + ")"
	case [][][]float64:
		parts := make([]string, len(v))
		for i, p := range v {
			parts[i] = wktCoords(p)
		}
		return "(" + strings.Join(parts, ", ") + ")"
	case []any:
		parts := make([]string, len(v))
		for i, p := range v {
			s := wktCoords(p)
			if _, pt := p.([]float64); pt {
				s = "(" + s + ")"
			}
			parts[i] = s
		}
		return "(" + strings.Join(parts, ", ") + ")"
	}
	return ""
}

// Project transforms g's positions in place: fn gets every x and every
// y (in position order) and rewrites them, as a CRS transformation does;
// z is kept.
func (g *Geometry) Project(fn func(x, y []float64) error) error {
	var xs, ys []float64
	g.walk(func(p []float64) {
		if len(p) >= 2 {
			xs, ys = append(xs, p[0]), append(ys, p[1])
		}
	})
	if len(xs) == 0 {
		return nil
	}
	if err := fn(xs, ys); err != nil {
		return err
	}
	i := 0
	g.walk(func(p []float64) {
		if len(p) >= 2 {
			p[0], p[1] = xs[i], ys[i]
			i++
		}
	})
	return nil
}
