package tiff

import (
	"encoding/binary"
	"math"
)

// tag is one IFD entry for the test builder: integer values, or doubles
// when typ is DOUBLE.
type tag struct {
	id, typ uint16
	v       []uint64
	f       []float64
	// n > 0: n values already in the file at offset at (shared arrays).
	n, at uint64
}

func short(id uint16, v ...uint64) tag { return tag{id: id, typ: typeShort, v: v} }
func long(id uint16, v ...uint64) tag  { return tag{id: id, typ: typeLong, v: v} }
func dbl(id uint16, f ...float64) tag  { return tag{id: id, typ: typeDouble, f: f} }

// builder writes small TIFF/BigTIFF files by hand for tests that need
// exact control over offsets (overlaps, loops, gaps).
type builder struct {
	bo   order
	big  bool
	b    []byte
	next int // position of the pointer to patch with the next IFD offset
}

// order is what binary.LittleEndian and binary.BigEndian both are.
type order interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

func newBuilder(bo order, big bool) *builder {
	w := &builder{bo: bo, big: big}
	if bo.String() == binary.LittleEndian.String() {
		w.b = append(w.b, 'I', 'I')
	} else {
		w.b = append(w.b, 'M', 'M')
	}
	if big {
		w.b = bo.AppendUint16(w.b, 43)
		w.b = bo.AppendUint16(w.b, 8)
		w.b = bo.AppendUint16(w.b, 0)
		w.next = len(w.b)
		w.b = bo.AppendUint64(w.b, 0)
	} else {
		w.b = bo.AppendUint16(w.b, 42)
		w.next = len(w.b)
		w.b = bo.AppendUint32(w.b, 0)
	}
	return w
}

// put appends data (word-aligned) and returns its offset.
func (w *builder) put(data []byte) uint64 {
	if len(w.b)%2 == 1 {
		w.b = append(w.b, 0)
	}
	off := len(w.b)
	w.b = append(w.b, data...)
	return uint64(off)
}

func (w *builder) word(b []byte, v uint64) []byte {
	if w.big {
		return w.bo.AppendUint64(b, v)
	}
	return w.bo.AppendUint32(b, uint32(v))
}

// ifd appends an IFD with tags (values out of line when they do not fit)
// and links it from the previous IFD (or the header). It returns the
// IFD's offset.
func (w *builder) ifd(tags ...tag) uint64 { return w.write(tags, true) }

// sub appends an IFD that no chain links to (a SubIFD: its parent's
// SubIFDs tag lists it) and returns its offset.
func (w *builder) sub(tags ...tag) uint64 { return w.write(tags, false) }

// write appends an IFD, linked from the previous one when link is set.
func (w *builder) write(tags []tag, link bool) uint64 {
	valSize := 4
	if w.big {
		valSize = 8
	}
	var vals [][]byte
	for _, t := range tags {
		var v []byte
		switch {
		case t.typ == typeDouble:
			for _, f := range t.f {
				v = w.bo.AppendUint64(v, math.Float64bits(f))
			}
		default:
			for _, x := range t.v {
				switch typeSize(t.typ) {
				case 2:
					v = w.bo.AppendUint16(v, uint16(x))
				case 4:
					v = w.bo.AppendUint32(v, uint32(x))
				default:
					v = w.bo.AppendUint64(v, x)
				}
			}
		}
		vals = append(vals, v)
	}
	offs := make([]uint64, len(tags))
	for i, v := range vals {
		if len(v) > valSize {
			offs[i] = w.put(v)
		}
	}
	at := w.put(nil)
	switch {
	case link && w.big:
		w.bo.PutUint64(w.b[w.next:], at)
	case link:
		w.bo.PutUint32(w.b[w.next:], uint32(at))
	}
	if w.big {
		w.b = w.bo.AppendUint64(w.b, uint64(len(tags)))
	} else {
		w.b = w.bo.AppendUint16(w.b, uint16(len(tags)))
	}
	for i, t := range tags {
		n := uint64(len(t.v) + len(t.f))
		if t.n > 0 {
			n = t.n
		}
		w.b = w.bo.AppendUint16(w.b, t.id)
		w.b = w.bo.AppendUint16(w.b, t.typ)
		if w.big {
			w.b = w.bo.AppendUint64(w.b, n)
		} else {
			w.b = w.bo.AppendUint32(w.b, uint32(n))
		}
		if t.n > 0 {
			w.b = w.word(w.b, t.at)
		} else if len(vals[i]) > valSize {
			w.b = w.word(w.b, offs[i])
		} else {
			v := make([]byte, valSize)
			copy(v, vals[i])
			w.b = append(w.b, v...)
		}
	}
	if link {
		w.next = len(w.b)
	}
	w.b = w.word(w.b, 0)
	return at
}

// tiled returns the tags of a w×h 8-bit single-band tiled image with the
// given tile size, offsets and byte counts.
func tiled(w, h, tw, th uint64, offs, counts []uint64, extra ...tag) []tag {
	t := []tag{
		long(tagImageWidth, w), long(tagImageLength, h), short(tagBitsPerSample, 8),
		short(tagCompression, 1), short(tagSamplesPerPixel, 1),
		long(tagTileWidth, tw), long(tagTileLength, th),
		long(tagTileOffsets, offs...), long(tagTileByteCounts, counts...),
	}
	return append(t, extra...)
}
