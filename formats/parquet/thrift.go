package parquet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Thrift compact protocol types.
const (
	tStop   = 0
	tTrue   = 1
	tFalse  = 2
	tByte   = 3
	tI16    = 4
	tI32    = 5
	tI64    = 6
	tDouble = 7
	tBinary = 8
	tList   = 9
	tSet    = 10
	tMap    = 11
	tStruct = 12
)

// maxDepth bounds struct/container nesting in any Thrift value we read.
const maxDepth = 64

var errTruncated = errors.New("thrift: truncated")

// treader reads Thrift compact values from a byte slice. Every count it
// returns is bounded by the bytes left, so nothing it feeds can allocate
// more than the input justifies. The first error sticks.
type treader struct {
	b     []byte
	pos   int
	depth int
	items int // decoder allocation budget (see take)
	err   error
}

func (r *treader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.pos = len(r.b)
}

func (r *treader) left() int { return len(r.b) - r.pos }

func (r *treader) byte1() byte {
	if r.pos >= len(r.b) {
		r.fail(errTruncated)
		return 0
	}
	c := r.b[r.pos]
	r.pos++
	return c
}

func (r *treader) uvarint() uint64 {
	var v uint64
	for shift := uint(0); shift < 70; shift += 7 {
		c := r.byte1()
		if r.err != nil {
			return 0
		}
		if shift == 63 && c > 1 {
			break
		}
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v
		}
	}
	r.fail(errors.New("thrift: varint overflow"))
	return 0
}

func (r *treader) varint() int64 {
	u := r.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func (r *treader) i32() int32 {
	v := r.varint()
	if v < math.MinInt32 || v > math.MaxInt32 {
		r.fail(errors.New("thrift: i32 out of range"))
		return 0
	}
	return int32(v)
}

func (r *treader) double() float64 {
	if r.left() < 8 {
		r.fail(errTruncated)
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(r.b[r.pos:]))
	r.pos += 8
	return v
}

// binary returns a sub-slice of the input (no copy).
func (r *treader) binary() []byte {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if n > uint64(r.left()) {
		r.fail(fmt.Errorf("thrift: %d-byte string with %d bytes left", n, r.left()))
		return nil
	}
	b := r.b[r.pos : r.pos+int(n) : r.pos+int(n)]
	r.pos += int(n)
	return b
}

// field reads a field header; it returns typ tStop at the end of a struct.
func (r *treader) field(last *int16) (typ byte, id int16) {
	c := r.byte1()
	if r.err != nil || c == tStop {
		return tStop, 0
	}
	typ = c & 0x0f
	if d := c >> 4; d != 0 {
		id = *last + int16(d)
	} else {
		v := r.varint()
		if v < math.MinInt16 || v > math.MaxInt16 {
			r.fail(errors.New("thrift: field id out of range"))
			return tStop, 0
		}
		id = int16(v)
	}
	if typ == tStop || typ > tStruct {
		r.fail(fmt.Errorf("thrift: field %d has invalid type %d", id, typ))
		return tStop, 0
	}
	*last = id
	return typ, id
}

// list reads a list or set header. n is at most the bytes left: every
// element takes at least one byte. An empty list may have element type 0.
func (r *treader) list() (elem byte, n int) {
	c := r.byte1()
	elem = c & 0x0f
	size := uint64(c >> 4)
	if size == 15 {
		size = r.uvarint()
	}
	if r.err != nil {
		return 0, 0
	}
	if size == 0 && elem == tStop {
		// fastparquet writes empty lists with element type 0; the
		// reference readers take them, and no element is read.
		return elem, 0
	}
	if elem == tStop || elem > tStruct {
		r.fail(fmt.Errorf("thrift: list of invalid type %d", elem))
		return 0, 0
	}
	if size > uint64(r.left()) {
		r.fail(fmt.Errorf("thrift: list of %d with %d bytes left", size, r.left()))
		return 0, 0
	}
	return elem, int(size)
}

// skip reads over one value of type typ.
func (r *treader) skip(typ byte) {
	if r.err != nil {
		return
	}
	switch typ {
	case tTrue, tFalse, tByte:
		// A bool field keeps its value in the type nibble, but a bool list
		// element takes one byte; callers of skip for fields pass tTrue/tFalse
		// through skipField instead.
		r.byte1()
	case tI16, tI32, tI64:
		r.uvarint()
	case tDouble:
		r.double()
	case tBinary:
		r.binary()
	case tList, tSet:
		if !r.enter() {
			return
		}
		elem, n := r.list()
		for i := 0; i < n && r.err == nil; i++ {
			r.skip(elem)
		}
		r.depth--
	case tMap:
		if !r.enter() {
			return
		}
		k, v, n := r.mapHeader()
		for i := uint64(0); i < n && r.err == nil; i++ {
			r.skip(k)
			r.skip(v)
		}
		r.depth--
	case tStruct:
		if !r.enter() {
			return
		}
		var last int16
		for r.err == nil {
			t, _ := r.field(&last)
			if t == tStop {
				break
			}
			r.skipField(t)
		}
		r.depth--
	default:
		r.fail(fmt.Errorf("thrift: invalid type %d", typ))
	}
}

// mapHeader reads a map's size and key and value types; n is at most
// half the bytes left (0 on an error).
func (r *treader) mapHeader() (k, v byte, n uint64) {
	n = r.uvarint()
	if n == 0 || r.err != nil {
		return 0, 0, 0
	}
	kv := r.byte1()
	k, v = kv>>4, kv&0x0f
	if r.err == nil && (k == tStop || k > tStruct || v == tStop || v > tStruct) {
		r.fail(errors.New("thrift: map of invalid type"))
	}
	if r.err == nil && n > uint64(r.left()/2) {
		r.fail(fmt.Errorf("thrift: map of %d with %d bytes left", n, r.left()))
	}
	if r.err != nil {
		return 0, 0, 0
	}
	return k, v, n
}

// skipField skips the value of a struct field of type typ.
func (r *treader) skipField(typ byte) {
	if typ == tTrue || typ == tFalse {
		return
	}
	r.skip(typ)
}

func (r *treader) enter() bool {
	r.depth++
	if r.depth > maxDepth {
		r.fail(fmt.Errorf("thrift: nesting deeper than %d", maxDepth))
		return false
	}
	return true
}

// validate walks one struct from the start of b and returns its encoded
// length. It is the pre-check: the whole value must be well formed, no
// deeper than maxDepth, and every count must fit in the bytes left.
func validate(b []byte) (int, error) {
	r := &treader{b: b}
	r.skip(tStruct)
	if r.err != nil {
		return 0, r.err
	}
	return r.pos, nil
}
