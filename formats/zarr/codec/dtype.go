package codec

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// DType is a fixed-size element type: its kind, its width in bytes and
// its byte order.
type DType struct {
	// Kind is numpy's letter: 'b' bool, 'i' signed, 'u' unsigned, 'f'
	// float, 'c' complex, 'M' datetime64, 'm' timedelta64, 'S' bytes,
	// 'U' UCS-4 text, 'V' raw bytes.
	Kind      byte
	Size      int  // bytes per element
	BigEndian bool // false for little endian and for one-byte types
}

// Numeric reports whether Float64 can convert elements of d.
func (d DType) Numeric() bool {
	switch d.Kind {
	case 'b', 'u', 'i', 'M', 'm':
		return d.Size == 1 || d.Size == 2 || d.Size == 4 || d.Size == 8
	case 'f':
		return d.Size == 2 || d.Size == 4 || d.Size == 8
	}
	return false
}

// String spells d as a Zarr v2 dtype: "<f8", ">i4", "|u1".
func (d DType) String() string {
	e := byte('<')
	switch {
	case d.Size == 1 || d.Kind == 'S' || d.Kind == 'V':
		e = '|'
	case d.BigEndian:
		e = '>'
	}
	n := d.Size
	if d.Kind == 'U' {
		n /= 4
	}
	return string([]byte{e, d.Kind}) + strconv.Itoa(n)
}

// ParseV2DType reads a Zarr v2 dtype as .zarray stores it: a JSON string
// such as "<f8", ">i4", "|u1", "<M8[ns]". A structured dtype (a JSON list)
// and object or variable-length types are unsupported.
func ParseV2DType(raw json.RawMessage) (DType, error) {
	var s string
	if err := json.Unmarshal(bytes.TrimSpace(raw), &s); err != nil {
		return DType{}, unsupported("data type", short(raw))
	}
	if len(s) < 3 {
		return DType{}, unsupported("data type", s)
	}
	var d DType
	switch s[0] {
	case '<', '|', '=': // '=' is native order; Zarr writers on every platform we meet are little endian
	case '>':
		d.BigEndian = true
	default:
		return DType{}, unsupported("data type", s)
	}
	d.Kind = s[1]
	digits := s[2:]
	if i := strings.IndexByte(digits, '['); i >= 0 && (d.Kind == 'M' || d.Kind == 'm') {
		digits = digits[:i] // the unit ("[ns]") does not change the width
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n <= 0 || n > 1<<20 {
		return DType{}, unsupported("data type", s)
	}
	switch d.Kind {
	case 'b', 'i', 'u', 'f', 'c', 'M', 'm', 'S', 'V':
		d.Size = n
	case 'U':
		d.Size = 4 * n
	default:
		return DType{}, unsupported("data type", s)
	}
	if d.Size == 1 || d.Kind == 'S' || d.Kind == 'V' {
		d.BigEndian = false
	}
	return d, nil
}

// v3Types maps the Zarr v3 core data type names to their kind and width.
var v3Types = map[string]DType{
	"bool": {Kind: 'b', Size: 1},
	"int8": {Kind: 'i', Size: 1}, "int16": {Kind: 'i', Size: 2}, "int32": {Kind: 'i', Size: 4}, "int64": {Kind: 'i', Size: 8},
	"uint8": {Kind: 'u', Size: 1}, "uint16": {Kind: 'u', Size: 2}, "uint32": {Kind: 'u', Size: 4}, "uint64": {Kind: 'u', Size: 8},
	"float16": {Kind: 'f', Size: 2}, "float32": {Kind: 'f', Size: 4}, "float64": {Kind: 'f', Size: 8},
	"complex64": {Kind: 'c', Size: 8}, "complex128": {Kind: 'c', Size: 16},
}

// ParseV3DataType reads a Zarr v3 data_type ("float64", "uint8", "r16").
// The byte order comes later, from the bytes codec; extension types given
// as objects and variable-length types ("string") are unsupported.
func ParseV3DataType(raw json.RawMessage) (DType, error) {
	var s string
	if err := json.Unmarshal(bytes.TrimSpace(raw), &s); err != nil {
		var ext struct { // an extension type: {"name": "optional", "configuration": ...}
			Name string `json:"name"`
		}
		if json.Unmarshal(raw, &ext) == nil && ext.Name != "" {
			return DType{}, unsupported("data type", ext.Name)
		}
		return DType{}, unsupported("data type", short(raw))
	}
	if d, ok := v3Types[s]; ok {
		return d, nil
	}
	if strings.HasPrefix(s, "r") {
		if bits, err := strconv.Atoi(s[1:]); err == nil && bits > 0 && bits%8 == 0 && bits <= 1<<20 {
			return DType{Kind: 'V', Size: bits / 8}, nil
		}
	}
	return DType{}, unsupported("data type", s)
}

// short is raw JSON cut to a length fit for an error message.
func short(raw json.RawMessage) string {
	s := strings.Join(strings.Fields(string(raw)), "")
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}

// Raw is a decoded chunk: its bytes as the array's memory holds them.
type Raw struct {
	Data  []byte
	DType DType
	Shape []int // the chunk's shape
	Order byte  // 'C' (last index varies fastest) or 'F' (first index does)
}

// Float64 converts every element of r to float64, in C order whatever
// r.Order is. Integers wider than 53 bits lose precision; datetimes give
// their raw count of units.
func (r Raw) Float64() ([]float64, error) {
	d := r.DType
	if !d.Numeric() {
		return nil, unsupported("data type", d.String()+" as numbers")
	}
	n, err := elements(r.Shape)
	if err != nil {
		return nil, err
	}
	if n*d.Size != len(r.Data) {
		return nil, corruptf("%d bytes for %d elements of %s", len(r.Data), n, d)
	}
	data := r.Data
	if r.Order == 'F' && len(r.Shape) > 1 {
		data = toC(data, d.Size, r.Shape, reversed(len(r.Shape)))
	}
	var bo binary.ByteOrder = binary.LittleEndian
	if d.BigEndian {
		bo = binary.BigEndian
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = number(data[i*d.Size:(i+1)*d.Size], d, bo)
	}
	return out, nil
}

// number is one element of kind d as float64; Numeric(d) holds.
func number(b []byte, d DType, bo binary.ByteOrder) float64 {
	var u uint64
	switch d.Size {
	case 1:
		u = uint64(b[0])
	case 2:
		u = uint64(bo.Uint16(b))
	case 4:
		u = uint64(bo.Uint32(b))
	default:
		u = bo.Uint64(b)
	}
	switch d.Kind {
	case 'f':
		switch d.Size {
		case 2:
			return half(uint16(u))
		case 4:
			return float64(math.Float32frombits(uint32(u)))
		}
		return math.Float64frombits(u)
	case 'i', 'M', 'm':
		shift := 64 - 8*uint(d.Size)
		return float64(int64(u<<shift) >> shift)
	}
	return float64(u)
}

// half converts an IEEE 754 binary16 to float64.
func half(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	frac := float64(h & 0x3ff)
	switch exp {
	case 0:
		return sign * frac * math.Pow(2, -24)
	case 0x1f:
		if frac != 0 {
			return math.NaN()
		}
		return math.Inf(int(sign))
	}
	return sign * (1 + frac/1024) * math.Pow(2, float64(exp-15))
}

// elements is the product of shape, refused when it overflows the cap.
func elements(shape []int) (int, error) {
	n := 1
	for _, s := range shape {
		if s < 0 || (s > 0 && n > MaxDecoded/s) {
			return 0, fmt.Errorf("chunk shape %v is too large (cap %d)", shape, MaxDecoded)
		}
		n *= s
	}
	return n, nil
}

// reversed is the permutation n-1, ..., 1, 0.
func reversed(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = n - 1 - i
	}
	return p
}

// toC lays out in C order an array of the given shape whose elements
// (size bytes each) src holds in the C order of the array transposed by
// perm: src's dimension i is the array's dimension perm[i]. An F-order
// array is the case perm = n-1, ..., 0.
func toC(src []byte, size int, shape, perm []int) []byte {
	nd := len(shape)
	tstride := make([]int, nd) // stride in src of src's dimension i
	s := 1
	for i := nd - 1; i >= 0; i-- {
		tstride[i] = s
		s *= shape[perm[i]]
	}
	stride := make([]int, nd) // stride in src of the array's dimension d
	for i, d := range perm {
		stride[d] = tstride[i]
	}
	out := make([]byte, len(src))
	idx := make([]int, nd)
	off := 0 // src element index of idx
	for o := 0; o < len(out); o += size {
		copy(out[o:o+size], src[off*size:off*size+size])
		for d := nd - 1; d >= 0; d-- {
			idx[d]++
			off += stride[d]
			if idx[d] < shape[d] {
				break
			}
			off -= stride[d] * idx[d]
			idx[d] = 0
		}
	}
	return out
}

// readUint reads an unsigned integer of len(b) (1, 2, 4 or 8) bytes.
func readUint(b []byte, bo binary.ByteOrder) uint64 {
	switch len(b) {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(bo.Uint16(b))
	case 4:
		return uint64(bo.Uint32(b))
	}
	return bo.Uint64(b)
}

// putUint writes the low len(b) bytes of v.
func putUint(b []byte, bo binary.ByteOrder, v uint64) {
	switch len(b) {
	case 1:
		b[0] = byte(v)
	case 2:
		bo.PutUint16(b, uint16(v))
	case 4:
		bo.PutUint32(b, uint32(v))
	default:
		bo.PutUint64(b, v)
	}
}
