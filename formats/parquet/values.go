package parquet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Column chunks of every physical type decoded into levels and values
// (for package rows), on the page walk and level decoding of pages.go.
// Encodings: PLAIN, PLAIN_DICTIONARY and RLE_DICTIONARY, RLE (booleans),
// DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY and
// BYTE_STREAM_SPLIT; anything else is an error naming it.

const (
	encBitPacked   = 4 // deprecated levels encoding
	encDeltaBinary = 5 // DELTA_BINARY_PACKED
	encByteSplit   = 9 // BYTE_STREAM_SPLIT
)

// Limits on decoding one column chunk into values, on top of the page
// limits (checkPage): the values a chunk may hold, whatever its pages
// claim, and the bytes its byte-array values may take once expanded
// (dictionary and DELTA_BYTE_ARRAY values can take far more than their
// pages).
const (
	maxChunkValues = 1 << 25
	maxValueBytes  = 1 << 30
)

// ErrUnsupported is wrapped by the errors of column chunks in an
// encoding, codec or type the decoder does not read.
var ErrUnsupported = errors.New("not supported")

// Column is a column chunk's levels and values.
type Column struct {
	// Def and Rep hold a level per value slot (null or not); nil when
	// the leaf has no such levels.
	Def, Rep []uint8
	// Values are the non-null values in order: bool, int32, int64,
	// float32, float64 or []byte (BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY, and
	// INT96 as its 12 little-endian bytes), each []byte its own copy.
	Values []any
}

// DecodeColumn decodes the column chunk chunk of leaf, its pages
// compressed with codec, checking every page against the decode limits
// before it decodes it.
func DecodeColumn(chunk []byte, codec int32, leaf *Leaf) (*Column, error) {
	if leaf.Type < TypeBoolean || leaf.Type > TypeFixedLenByteArray {
		return nil, fmt.Errorf("%w: physical %s", ErrUnsupported, typeName(leaf.Type))
	}
	if leaf.Type == TypeFixedLenByteArray && leaf.TypeLength < 0 {
		return nil, fmt.Errorf("FIXED_LEN_BYTE_ARRAY of length %d", leaf.TypeLength)
	}
	d := &colDecoder{leaf: leaf, codec: codec}
	if err := eachPage(chunk, d.page); err != nil {
		if errors.Is(err, errNotDecoded) { // limits, LZO: say what, not why footprints
			err = fmt.Errorf("%w: %s", ErrUnsupported, err)
		}
		return nil, err
	}
	return &d.col, nil
}

// colDecoder decodes one column chunk's pages in order.
type colDecoder struct {
	leaf  *Leaf
	codec int32
	dict  []any
	col   Column
	slots int    // level entries so far
	bytes int64  // bytes of byte-array values so far
	arena []byte // what clone copies into: one allocation for many values
}

func (d *colDecoder) page(p pageInfo, body []byte) error {
	switch p.kind {
	case pageDictionary:
		if p.encoding != encPlain && p.encoding != encPlainDict {
			return fmt.Errorf("%w: dictionary page in encoding %s", ErrUnsupported, encodingName(p.encoding))
		}
		data, err := decompress(d.codec, body, p.uncompressed)
		if err != nil {
			return err
		}
		d.dict = make([]any, 0, p.values)
		if err := d.plain(data, int(p.values), func(v any) { d.dict = append(d.dict, v) }); err != nil {
			return fmt.Errorf("dictionary page: %w", err)
		}
	case pageData, pageDataV2:
		if d.slots += int(p.values); d.slots > maxChunkValues {
			return fmt.Errorf("%w: column chunk of over %d values", ErrUnsupported, maxChunkValues)
		}
		pg, err := splitPage(p, body, d.codec, levelInfo{maxRep: d.leaf.MaxRep, maxDef: d.leaf.MaxDef})
		if err != nil {
			return err
		}
		d.col.Rep = append(d.col.Rep, pg.rep...)
		d.col.Def = append(d.col.Def, pg.def...)
		d.col.Values = slices.Grow(d.col.Values, pg.present)
		return d.values(pg.values, p.encoding, pg.present)
	}
	return nil
}

func (d *colDecoder) emit(v any) { d.col.Values = append(d.col.Values, v) }

// clone copies a byte-array value (nil when empty), counting it against
// maxValueBytes. Copies share arenas of 32 KiB, each copy capped so that
// appending to it cannot overwrite the next.
func (d *colDecoder) clone(b []byte) ([]byte, error) {
	if d.bytes += int64(len(b)); d.bytes > maxValueBytes {
		return nil, fmt.Errorf("%w: byte-array values of over %d bytes in one column chunk", ErrUnsupported, maxValueBytes)
	}
	if len(b) == 0 {
		return nil, nil
	}
	if cap(d.arena)-len(d.arena) < len(b) {
		d.arena = make([]byte, 0, max(len(b), 32<<10))
	}
	n := len(d.arena)
	d.arena = append(d.arena, b...)
	return d.arena[n:len(d.arena):len(d.arena)], nil
}

// emitBytes is a visit function for the byte-array decoders of pages.go
// and delta.go.
func (d *colDecoder) emitBytes(b []byte) error {
	c, err := d.clone(b)
	if err == nil {
		d.emit(c)
	}
	return err
}

// values decodes the n non-null values of a data page in encoding enc.
func (d *colDecoder) values(b []byte, enc int32, n int) error {
	typ := d.leaf.Type
	switch {
	case enc == encPlain:
		return d.plain(b, n, d.emit)
	case enc == encPlainDict || enc == encRLEDict:
		if d.dict == nil && n > 0 {
			return errors.New("dictionary-encoded page without a dictionary page")
		}
		return dictIndices(b, n, len(d.dict), func(i uint64, k int) error {
			for range k {
				v := d.dict[i]
				if bv, ok := v.([]byte); ok {
					c, err := d.clone(bv)
					if err != nil {
						return err
					}
					v = c
				}
				d.emit(v)
			}
			return nil
		})
	case enc == encRLE && typ == TypeBoolean:
		return d.rleBooleans(b, n)
	case enc == encDeltaBinary && (typ == TypeInt32 || typ == TypeInt64):
		return d.deltaInts(b, n)
	case enc == encDeltaLength && typ == TypeByteArray:
		return deltaLengthValues(b, n, d.emitBytes)
	case enc == encDeltaBytes && typ == TypeByteArray:
		return deltaByteValues(b, n, d.emitBytes)
	case enc == encDeltaBytes && typ == TypeFixedLenByteArray:
		return deltaByteValues(b, n, func(v []byte) error {
			if len(v) != int(d.leaf.TypeLength) {
				return fmt.Errorf("value of %d bytes in a FIXED_LEN_BYTE_ARRAY(%d)", len(v), d.leaf.TypeLength)
			}
			return d.emitBytes(v)
		})
	case enc == encByteSplit && typ != TypeBoolean && typ != TypeByteArray && typ != TypeInt96:
		return d.byteSplit(b, n)
	}
	return fmt.Errorf("%w: encoding %s for %s values", ErrUnsupported, encodingName(enc), typeName(typ))
}

// width is the bytes a fixed-width value takes; 0 for BOOLEAN and
// BYTE_ARRAY.
func (d *colDecoder) width() int {
	switch d.leaf.Type {
	case TypeInt32, TypeFloat:
		return 4
	case TypeInt64, TypeDouble:
		return 8
	case TypeInt96:
		return 12
	case TypeFixedLenByteArray:
		return int(d.leaf.TypeLength)
	}
	return 0
}

// fixed decodes one fixed-width value from its little-endian bytes b.
func (d *colDecoder) fixed(b []byte) (any, error) {
	switch d.leaf.Type {
	case TypeInt32:
		return int32(binary.LittleEndian.Uint32(b)), nil
	case TypeInt64:
		return int64(binary.LittleEndian.Uint64(b)), nil
	case TypeFloat:
		return math.Float32frombits(binary.LittleEndian.Uint32(b)), nil
	case TypeDouble:
		return math.Float64frombits(binary.LittleEndian.Uint64(b)), nil
	}
	return d.clone(b) // INT96, FIXED_LEN_BYTE_ARRAY
}

// plain decodes n PLAIN values from b.
func (d *colDecoder) plain(b []byte, n int, emit func(any)) error {
	switch d.leaf.Type {
	case TypeBoolean:
		if len(b) < (n+7)/8 {
			return fmt.Errorf("%d booleans in %d bytes", n, len(b))
		}
		for i := range n {
			emit(b[i/8]>>(i%8)&1 == 1)
		}
		return nil
	case TypeByteArray:
		_, err := plainByteArrays(b, n, func(v []byte) error {
			c, err := d.clone(v)
			emit(c)
			return err
		})
		return err
	}
	w := d.width()
	if int64(len(b)) < int64(n)*int64(w) {
		return fmt.Errorf("%d values of %d bytes in %d bytes", n, w, len(b))
	}
	for i := range n {
		v, err := d.fixed(b[i*w : (i+1)*w])
		if err != nil {
			return err
		}
		emit(v)
	}
	return nil
}

// rleBooleans decodes n RLE booleans: a 4-byte length, then the RLE
// hybrid of bit width 1.
func (d *colDecoder) rleBooleans(b []byte, n int) error {
	if len(b) < 4 {
		return errors.New("truncated boolean run length")
	}
	l := binary.LittleEndian.Uint32(b)
	if uint64(l) > uint64(len(b)-4) {
		return fmt.Errorf("booleans of %d bytes, %d left", l, len(b)-4)
	}
	got := 0
	err := rleHybrid(b[4:4+l], 1, n, func(v uint64, k int) error {
		for range k {
			d.emit(v == 1)
		}
		got += k
		return nil
	})
	if err == nil && got != n {
		err = fmt.Errorf("%d booleans of %d", got, n)
	}
	return err
}

// deltaInts decodes n DELTA_BINARY_PACKED integers; INT32 values wrap as
// the writer's 32-bit arithmetic did.
func (d *colDecoder) deltaInts(b []byte, n int) error {
	if n == 0 {
		return nil
	}
	dec, err := newDBP(b, n)
	if err != nil {
		return err
	}
	for range n {
		v, err := dec.next()
		if err != nil {
			return err
		}
		if d.leaf.Type == TypeInt32 {
			d.emit(int32(v))
		} else {
			d.emit(v)
		}
	}
	return nil
}

// byteSplit decodes n BYTE_STREAM_SPLIT values: byte k of value i is at
// k*n+i.
func (d *colDecoder) byteSplit(b []byte, n int) error {
	w := d.width()
	if int64(len(b)) < int64(n)*int64(w) {
		return fmt.Errorf("%d split values of %d bytes in %d bytes", n, w, len(b))
	}
	v := make([]byte, w)
	for i := range n {
		for k := range w {
			v[k] = b[k*n+i]
		}
		x, err := d.fixed(v)
		if err != nil {
			return err
		}
		d.emit(x)
	}
	return nil
}

// encodingName names encoding e for messages.
func encodingName(e int32) string {
	names := map[int32]string{encPlain: "PLAIN", encPlainDict: "PLAIN_DICTIONARY", encRLE: "RLE",
		encBitPacked: "BIT_PACKED", encDeltaBinary: "DELTA_BINARY_PACKED", encDeltaLength: "DELTA_LENGTH_BYTE_ARRAY",
		encDeltaBytes: "DELTA_BYTE_ARRAY", encRLEDict: "RLE_DICTIONARY", encByteSplit: "BYTE_STREAM_SPLIT"}
	if s, ok := names[e]; ok {
		return s
	}
	return fmt.Sprintf("%d", e)
}
