package parquet

import (
	"encoding/binary"
	"fmt"
	"math"
)

// A footer that a merge rebuilds is decoded into a tree of Thrift values
// and encoded again: fields the merge does not touch, known or not, go
// back with the same values, so nothing a newer writer put there is lost.
// The encoding is canonical (short field headers where they fit, minimal
// varints), so the bytes may differ from the input's; the values do not.

// tvalue is one Thrift compact value of type typ. Bools are typ tTrue
// with i 1 or 0; the integer types keep their value in i, a double its
// bits in i, a binary its bytes in b.
type tvalue struct {
	typ    byte
	i      int64
	b      []byte
	elem   byte     // list/set element type; map key type
	velem  byte     // map value type
	items  []tvalue // list/set elements; map keys and values, alternating
	fields []tfield // struct fields, in input order
}

// tfield is one field of a struct.
type tfield struct {
	id int16
	v  tvalue
}

// decodeStruct decodes one struct from the start of b into a tree and
// returns it with its encoded length.
func decodeStruct(b []byte) (*tvalue, int, error) {
	if _, err := validate(b); err != nil {
		return nil, 0, err
	}
	r := &treader{b: b}
	v := r.value(tStruct, false)
	if r.err != nil {
		return nil, 0, r.err
	}
	return &v, r.pos, nil
}

// value reads one value of type typ; inField says a bool keeps its value
// in the field header, which the caller passed as typ.
func (r *treader) value(typ byte, inField bool) tvalue {
	v := tvalue{typ: typ}
	switch typ {
	case tTrue, tFalse:
		v.typ = tTrue
		if inField {
			v.i = b2i(typ == tTrue)
		} else {
			v.i = b2i(r.byte1() == tTrue)
		}
	case tByte:
		v.i = int64(int8(r.byte1()))
	case tI16, tI32, tI64:
		v.i = r.varint()
	case tDouble:
		v.i = int64(math.Float64bits(r.double()))
	case tBinary:
		v.b = r.binary()
	case tList, tSet:
		if !r.enter() {
			return v
		}
		elem, n := r.list()
		v.elem = boolType(elem)
		v.items = make([]tvalue, 0, n)
		for i := 0; i < n && r.err == nil; i++ {
			v.items = append(v.items, r.value(elem, false))
		}
		r.depth--
	case tMap:
		r.mapValue(&v)
	case tStruct:
		if !r.enter() {
			return v
		}
		var last int16
		for r.err == nil {
			t, id := r.field(&last)
			if t == tStop {
				break
			}
			v.fields = append(v.fields, tfield{id: id, v: r.value(t, true)})
		}
		r.depth--
	default:
		r.fail(fmt.Errorf("thrift: invalid type %d", typ))
	}
	return v
}

// mapValue reads a map's header and entries into v.
func (r *treader) mapValue(v *tvalue) {
	if !r.enter() {
		return
	}
	defer func() { r.depth-- }()
	k, e, n := r.mapHeader()
	if n == 0 {
		return
	}
	v.elem, v.velem = boolType(k), boolType(e)
	v.items = make([]tvalue, 0, 2*n)
	for i := uint64(0); i < n && r.err == nil; i++ {
		v.items = append(v.items, r.value(k, false), r.value(e, false))
	}
}

func boolType(t byte) byte {
	if t == tFalse {
		return tTrue
	}
	return t
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// encode appends the struct v to b.
func (v *tvalue) encode(b []byte) []byte { return v.appendBody(b) }

// appendBody appends v's value (without a field header).
func (v *tvalue) appendBody(b []byte) []byte {
	switch v.typ {
	case tTrue:
		if v.i != 0 {
			return append(b, tTrue)
		}
		return append(b, tFalse)
	case tByte:
		return append(b, byte(v.i))
	case tI16, tI32, tI64:
		return binary.AppendUvarint(b, uint64(v.i<<1)^uint64(v.i>>63))
	case tDouble:
		return binary.LittleEndian.AppendUint64(b, uint64(v.i))
	case tBinary:
		return append(binary.AppendUvarint(b, uint64(len(v.b))), v.b...)
	case tList, tSet:
		if n := len(v.items); n < 15 {
			b = append(b, byte(n)<<4|v.elem)
		} else {
			b = binary.AppendUvarint(append(b, 0xf0|v.elem), uint64(n))
		}
		for i := range v.items {
			b = v.items[i].appendBody(b)
		}
		return b
	case tMap:
		b = binary.AppendUvarint(b, uint64(len(v.items)/2))
		if len(v.items) > 0 {
			b = append(b, v.elem<<4|v.velem)
		}
		for i := range v.items {
			b = v.items[i].appendBody(b)
		}
		return b
	}
	var last int16
	for i := range v.fields {
		f := &v.fields[i]
		typ := f.v.typ
		if typ == tTrue && f.v.i == 0 {
			typ = tFalse
		}
		if d := int(f.id) - int(last); d > 0 && d <= 15 {
			b = append(b, byte(d)<<4|typ)
		} else {
			b = binary.AppendUvarint(append(b, typ), uint64(int64(f.id)<<1)^uint64(int64(f.id)>>63))
		}
		last = f.id
		if typ != tTrue && typ != tFalse {
			b = f.v.appendBody(b)
		}
	}
	return append(b, tStop)
}

// field returns the struct's field id of type typ, or nil.
func (v *tvalue) field(id int16, typ byte) *tvalue {
	for i := range v.fields {
		if f := &v.fields[i]; f.id == id && f.v.typ == typ {
			return &f.v
		}
	}
	return nil
}
