package flatgeobuf

import (
	"encoding/binary"
	"errors"
	"math"
)

// A minimal flatbuffer reader. Every access is bounds-checked against the
// buffer and returns errBuf instead of panicking: the Go flatbuffers runtime
// has no verifier, and these bytes are untrusted.

var errBuf = errors.New("malformed flatbuffer")

// table is a flatbuffer table at pos inside b.
type table struct {
	b   []byte
	pos uint32
	vt  uint32 // vtable position
	vtn uint32 // vtable length in bytes
	tn  uint32 // table inline length in bytes (from the vtable)
}

func u32(b []byte, off uint64) (uint32, bool) {
	if off > uint64(len(b)) || uint64(len(b))-off < 4 {
		return 0, false
	}
	return binary.LittleEndian.Uint32(b[off:]), true
}

func u16(b []byte, off uint64) (uint16, bool) {
	if off > uint64(len(b)) || uint64(len(b))-off < 2 {
		return 0, false
	}
	return binary.LittleEndian.Uint16(b[off:]), true
}

// root returns the root table of buffer b.
func root(b []byte) (table, error) {
	off, ok := u32(b, 0)
	if !ok {
		return table{}, errBuf
	}
	return tableAt(b, uint64(off))
}

// tableAt reads the table starting at pos and checks its vtable.
func tableAt(b []byte, pos uint64) (table, error) {
	so, ok := u32(b, pos)
	if !ok {
		return table{}, errBuf
	}
	vt := int64(pos) - int64(int32(so))
	if vt < 0 || vt > int64(len(b)) {
		return table{}, errBuf
	}
	vtn, ok1 := u16(b, uint64(vt))
	tn, ok2 := u16(b, uint64(vt)+2)
	if !ok1 || !ok2 || vtn < 4 || vtn%2 != 0 || uint64(vt)+uint64(vtn) > uint64(len(b)) ||
		tn < 4 || pos+uint64(tn) > uint64(len(b)) {
		return table{}, errBuf
	}
	return table{b: b, pos: uint32(pos), vt: uint32(vt), vtn: uint32(vtn), tn: uint32(tn)}, nil
}

// field returns the absolute position of field i (0-based) and whether it
// is present. A present field must lie inside the table with width bytes.
func (t table) field(i int, width uint32) (uint64, bool, error) {
	slot := 4 + 2*uint32(i)
	if slot+2 > t.vtn {
		return 0, false, nil
	}
	o, _ := u16(t.b, uint64(t.vt)+uint64(slot))
	if o == 0 {
		return 0, false, nil
	}
	if uint32(o) < 4 || uint32(o)+width > t.tn {
		return 0, false, errBuf
	}
	return uint64(t.pos) + uint64(o), true, nil
}

func (t table) uint8(i int, def uint8) (uint8, error) {
	p, ok, err := t.field(i, 1)
	if err != nil || !ok {
		return def, err
	}
	return t.b[p], nil
}

func (t table) bool(i int) (bool, error) {
	v, err := t.uint8(i, 0)
	return v != 0, err
}

func (t table) uint16(i int, def uint16) (uint16, error) {
	p, ok, err := t.field(i, 2)
	if err != nil || !ok {
		return def, err
	}
	v, _ := u16(t.b, p)
	return v, nil
}

func (t table) int32(i int) (int32, error) {
	p, ok, err := t.field(i, 4)
	if err != nil || !ok {
		return 0, err
	}
	v, _ := u32(t.b, p)
	return int32(v), nil
}

func (t table) uint64(i int) (uint64, error) {
	p, ok, err := t.field(i, 8)
	if err != nil || !ok {
		return 0, err
	}
	return binary.LittleEndian.Uint64(t.b[p:]), nil
}

// indirect follows the uoffset stored in field i.
func (t table) indirect(i int) (uint64, bool, error) {
	p, ok, err := t.field(i, 4)
	if err != nil || !ok {
		return 0, false, err
	}
	o, _ := u32(t.b, p)
	return p + uint64(o), true, nil
}

// vector returns the element start and length of vector field i whose
// elements are elem bytes wide; the whole vector is inside the buffer.
func (t table) vector(i int, elem uint64) (start uint64, n uint32, err error) {
	p, ok, err := t.indirect(i)
	if err != nil || !ok {
		return 0, 0, err
	}
	n, ok = u32(t.b, p)
	if !ok || uint64(n)*elem > uint64(len(t.b))-(p+4) {
		return 0, 0, errBuf
	}
	return p + 4, n, nil
}

// bytes returns the contents of string or [ubyte] field i.
func (t table) bytes(i int) ([]byte, error) {
	s, n, err := t.vector(i, 1)
	if err != nil || n == 0 {
		return nil, err
	}
	return t.b[s : s+uint64(n)], nil
}

// float64s returns a reader over a [double] field.
func (t table) float64s(i int) (f64s, error) {
	s, n, err := t.vector(i, 8)
	if err != nil {
		return f64s{}, err
	}
	return f64s{b: t.b[s : s+8*uint64(n)]}, nil
}

// sub returns the table in field i.
func (t table) sub(i int) (table, bool, error) {
	p, ok, err := t.indirect(i)
	if err != nil || !ok {
		return table{}, false, err
	}
	st, err := tableAt(t.b, p)
	return st, err == nil, err
}

// tables returns the tables of a [Table] field.
func (t table) tables(i int, fn func(table) error) error {
	s, n, err := t.vector(i, 4)
	if err != nil {
		return err
	}
	for k := uint64(0); k < uint64(n); k++ {
		p := s + 4*k
		o, _ := u32(t.b, p)
		st, err := tableAt(t.b, p+uint64(o))
		if err != nil {
			return err
		}
		if err := fn(st); err != nil {
			return err
		}
	}
	return nil
}

// f64s is a little-endian [double] vector.
type f64s struct{ b []byte }

func (v f64s) len() int { return len(v.b) / 8 }

func (v f64s) at(i int) float64 {
	return math.Float64frombits(binary.LittleEndian.Uint64(v.b[8*i:]))
}
