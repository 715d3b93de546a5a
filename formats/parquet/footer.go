package parquet

import (
	"errors"
	"fmt"

	"github.com/chunkvc/chunkvc/geom"
)

// fileMeta is the part of FileMetaData the adapter uses. Byte slices point
// into the footer buffer.
type fileMeta struct {
	schemaRaw []byte // encoded schema list, for the fingerprint
	leaves    int
	top       []topLeaf // the leaf columns right under the root
	numRows   int64
	rowGroups []rowGroup
	geo       []byte
	hasGeo    bool
	createdBy []byte
	encrypted bool // encryption_algorithm set (plaintext-footer encryption)
}

type rowGroup struct {
	numRows int64
	cols    []column
}

// column is one ColumnChunk with the ColumnMetaData fields we need.
type column struct {
	pathRaw  []byte // path_in_schema, still Thrift-encoded (list<binary>)
	typ      int32
	codec    int32
	hasMeta  bool
	external bool // file_path set
	crypto   bool // crypto_metadata or encrypted_column_metadata set

	totalCompressed int64
	dataPage        int64
	dictPage        int64

	bloomOff, ciOff, oiOff int64
	bloomLen, ciLen, oiLen int32

	min, max []byte // Statistics min_value/max_value (or deprecated min/max)
	// minValue, maxValue: min_value/max_value alone, whose order is the
	// column's (the deprecated min/max may be signed bytewise).
	minValue, maxValue []byte
	geoBBox            *geom.BBox
}

// maxItems bounds the row groups and column chunks decoded from one
// footer; so does one per 8 footer bytes (plus 1024). A forged footer of empty structs thus cannot make the decoder
// allocate far more than a real footer of that size would need: a real
// column chunk takes tens of footer bytes.
const maxItems = 1 << 20

// decodeFooter decodes a footer that validate accepted.
func decodeFooter(b []byte) (*fileMeta, error) {
	r := &treader{b: b, depth: 1, items: min(maxItems, 1024+len(b)/8)}
	m := &fileMeta{}
	var last int16
	for r.err == nil {
		t, id := r.field(&last)
		if t == tStop {
			break
		}
		switch {
		case id == 2 && t == tList:
			start := r.pos
			m.leaves, m.top = r.schema()
			m.schemaRaw = b[start:r.pos]
		case id == 3 && t == tI64:
			m.numRows = r.varint()
		case id == 4 && t == tList:
			m.rowGroups = r.rowGroups()
		case id == 5 && t == tList:
			r.keyValues(m)
		case id == 6 && t == tBinary:
			m.createdBy = r.binary()
		case id == 8:
			m.encrypted = true
			r.skipField(t)
		default:
			r.skipField(t)
		}
	}
	if r.err != nil {
		return nil, fmt.Errorf("footer: %w", r.err)
	}
	return m, nil
}

// take spends n of the decoder's item budget.
func (r *treader) take(n int) bool {
	if r.err != nil {
		return false
	}
	if r.items -= n; r.items < 0 {
		r.fail(fmt.Errorf("footer has too many row groups or column chunks for its size"))
		return false
	}
	return true
}

// schema reads the SchemaElement list, counts the leaves and returns the
// top-level ones (direct children of the root) with their repetition.
func (r *treader) schema() (leaves int, top []topLeaf) {
	elem, n := r.list()
	if elem != tStruct {
		r.skipItems(elem, n)
		return 0, nil
	}
	// Children still to come of each group being read, the root first.
	var open []int32
	for i := 0; i < n && r.err == nil; i++ {
		children, rep := int32(0), int32(-1)
		var name, crs []byte
		var logical int16
		var last int16
		for r.err == nil {
			t, id := r.field(&last)
			if t == tStop {
				break
			}
			switch {
			case id == 3 && t == tI32:
				rep = r.i32()
			case id == 4 && t == tBinary:
				name = r.binary()
			case id == 5 && t == tI32:
				children = r.i32()
			case id == 10 && t == tStruct:
				logical, crs = r.logicalType()
			default:
				r.skipField(t)
			}
		}
		if i > 0 && children <= 0 {
			leaves++
			if len(open) == 1 {
				top = append(top, topLeaf{name: name, rep: rep, logical: logical, crs: crs})
			}
		}
		if i > 0 && len(open) > 0 {
			open[len(open)-1]--
		}
		if children > 0 {
			open = append(open, children)
		}
		for len(open) > 0 && open[len(open)-1] <= 0 {
			open = open[:len(open)-1]
		}
	}
	return leaves, top
}

// topLeaf is a leaf column that is a direct child of the schema's root.
type topLeaf struct {
	name    []byte
	rep     int32 // FieldRepetitionType: 0 required, 1 optional, 2 repeated; -1 unset
	logical int16 // LogicalType union member: logicalGeometry, logicalGeography or other
	crs     []byte
}

// LogicalType union members for Parquet's geospatial types (format 2.11).
const (
	logicalGeometry  = 17
	logicalGeography = 18
)

// logicalType reads a LogicalType union and returns the field id of the
// member set and, for GEOMETRY and GEOGRAPHY, their crs (field 1).
func (r *treader) logicalType() (member int16, crs []byte) {
	var last int16
	for r.err == nil {
		t, id := r.field(&last)
		if t == tStop {
			break
		}
		if t != tStruct || (id != logicalGeometry && id != logicalGeography) {
			r.skipField(t)
			continue
		}
		member = id
		var l2 int16
		for r.err == nil {
			t2, id2 := r.field(&l2)
			if t2 == tStop {
				break
			}
			if id2 == 1 && t2 == tBinary {
				crs = r.binary()
			} else {
				r.skipField(t2)
			}
		}
	}
	return member, crs
}

// levels says how the top-level leaf column name is levelled; ok is false
// when the schema has no such column.
func (m *fileMeta) levels(name string) (lv levelInfo, ok bool) {
	for _, l := range m.top {
		if string(l.name) != name {
			continue
		}
		switch l.rep {
		case 0:
			return levelInfo{}, true
		case 1:
			return levelInfo{maxDef: 1}, true
		case 2:
			return levelInfo{maxRep: 1, maxDef: 1}, true
		}
		return levelInfo{}, false
	}
	return levelInfo{}, false
}

func (r *treader) skipItems(elem byte, n int) {
	for i := 0; i < n && r.err == nil; i++ {
		r.skip(elem)
	}
}

func (r *treader) rowGroups() []rowGroup {
	elem, n := r.list()
	if elem != tStruct {
		r.skipItems(elem, n)
		return nil
	}
	out := make([]rowGroup, 0, min(n, max(r.items, 0)))
	for i := 0; i < n && r.err == nil; i++ {
		var g rowGroup
		r.take(1)
		var last int16
		for r.err == nil {
			t, id := r.field(&last)
			if t == tStop {
				break
			}
			switch {
			case id == 1 && t == tList:
				e, k := r.list()
				if e != tStruct {
					r.skipItems(e, k)
					continue
				}
				g.cols = make([]column, 0, min(k, max(r.items, 0)))
				for j := 0; j < k && r.take(1); j++ {
					g.cols = append(g.cols, r.columnChunk())
				}
			case id == 3 && t == tI64:
				g.numRows = r.varint()
			default:
				r.skipField(t)
			}
		}
		out = append(out, g)
	}
	return out
}

func (r *treader) columnChunk() column {
	var c column
	var last int16
	for r.err == nil {
		t, id := r.field(&last)
		if t == tStop {
			break
		}
		switch {
		case id == 1 && t == tBinary:
			c.external = len(r.binary()) > 0
		case id == 3 && t == tStruct:
			c.hasMeta = true
			r.columnMeta(&c)
		case id == 4 && t == tI64:
			c.oiOff = r.varint()
		case id == 5 && t == tI32:
			c.oiLen = r.i32()
		case id == 6 && t == tI64:
			c.ciOff = r.varint()
		case id == 7 && t == tI32:
			c.ciLen = r.i32()
		case id == 8 || id == 9:
			c.crypto = true
			r.skipField(t)
		default:
			r.skipField(t)
		}
	}
	return c
}

func (r *treader) columnMeta(c *column) {
	var last int16
	for r.err == nil {
		t, id := r.field(&last)
		if t == tStop {
			break
		}
		switch {
		case id == 1 && t == tI32:
			c.typ = r.i32()
		case id == 3 && t == tList:
			start := r.pos
			e, n := r.list()
			if e != tBinary {
				r.skipItems(e, n)
				continue
			}
			for i := 0; i < n && r.err == nil; i++ {
				r.binary()
			}
			c.pathRaw = r.b[start:r.pos]
		case id == 4 && t == tI32:
			c.codec = r.i32()
		case id == 7 && t == tI64:
			c.totalCompressed = r.varint()
		case id == 9 && t == tI64:
			c.dataPage = r.varint()
		case id == 11 && t == tI64:
			c.dictPage = r.varint()
		case id == 12 && t == tStruct:
			r.statistics(c)
		case id == 14 && t == tI64:
			c.bloomOff = r.varint()
		case id == 15 && t == tI32:
			c.bloomLen = r.i32()
		case id == 17 && t == tStruct:
			r.geoStatistics(c)
		default:
			r.skipField(t)
		}
	}
}

func (r *treader) statistics(c *column) {
	var last int16
	var min, max, minV, maxV []byte
	for r.err == nil {
		t, id := r.field(&last)
		if t == tStop {
			break
		}
		if t != tBinary || id < 1 || id > 6 || id == 3 || id == 4 {
			r.skipField(t)
			continue
		}
		v := r.binary()
		switch id {
		case 1:
			max = v
		case 2:
			min = v
		case 5:
			maxV = v
		case 6:
			minV = v
		}
	}
	c.minValue, c.maxValue = minV, maxV
	if minV != nil && maxV != nil {
		c.min, c.max = minV, maxV
	} else {
		c.min, c.max = min, max
	}
}

func (r *treader) geoStatistics(c *column) {
	var last int16
	for r.err == nil {
		t, id := r.field(&last)
		if t == tStop {
			break
		}
		if id != 1 || t != tStruct {
			r.skipField(t)
			continue
		}
		// BoundingBox: 1 xmin, 2 xmax, 3 ymin, 4 ymax (required doubles).
		var v [4]float64
		var seen int
		var l2 int16
		for r.err == nil {
			t2, id2 := r.field(&l2)
			if t2 == tStop {
				break
			}
			if t2 == tDouble && id2 >= 1 && id2 <= 4 {
				v[id2-1] = r.double()
				seen |= 1 << (id2 - 1)
			} else {
				r.skipField(t2)
			}
		}
		if seen == 0xf {
			c.geoBBox = bboxIf(geom.BBox{MinX: v[0], MinY: v[2], MaxX: v[1], MaxY: v[3]})
		}
	}
}

func (r *treader) keyValues(m *fileMeta) {
	elem, n := r.list()
	if elem != tStruct {
		r.skipItems(elem, n)
		return
	}
	for i := 0; i < n && r.err == nil; i++ {
		var key, val []byte
		var hasVal bool
		var last int16
		for r.err == nil {
			t, id := r.field(&last)
			if t == tStop {
				break
			}
			switch {
			case id == 1 && t == tBinary:
				key = r.binary()
			case id == 2 && t == tBinary:
				val, hasVal = r.binary(), true
			default:
				r.skipField(t)
			}
		}
		if string(key) == "geo" && hasVal && !m.hasGeo {
			m.geo, m.hasGeo = val, true
		}
	}
}

// pageHeader reads a PageHeader at the start of b and returns its encoded
// length and compressed_page_size (field 3).
func pageHeader(b []byte) (hdr int, size int32, err error) {
	return sizedHeader(b, 3, "page header without a valid compressed_page_size")
}

// bloomHeader reads a BloomFilterHeader and returns its encoded length and
// num_bytes (field 1, the bitset that follows it).
func bloomHeader(b []byte) (hdr int, size int32, err error) {
	return sizedHeader(b, 1, "bloom filter header without a valid num_bytes")
}

// sizedHeader reads a Thrift struct at the start of b whose i32 field
// sizeField gives the length of what follows it.
func sizedHeader(b []byte, sizeField int16, missing string) (hdr int, size int32, err error) {
	r := &treader{b: b, depth: 1}
	var last int16
	seen := false
	for r.err == nil {
		t, id := r.field(&last)
		if t == tStop {
			break
		}
		if id == sizeField && t == tI32 {
			size, seen = r.i32(), true
		} else {
			r.skipField(t)
		}
	}
	switch {
	case r.err != nil:
		return 0, 0, r.err
	case !seen || size < 0:
		return 0, 0, errors.New(missing)
	}
	return r.pos, size, nil
}

// components decodes the column path (empty when there is none).
func (c *column) components() [][]byte {
	r := &treader{b: c.pathRaw}
	if len(c.pathRaw) == 0 {
		return nil
	}
	_, n := r.list()
	out := make([][]byte, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		out = append(out, r.binary())
	}
	return out
}

// samePath reports whether the column's path is want.
func (c *column) samePath(want []string) bool {
	if len(c.pathRaw) == 0 {
		return false
	}
	r := &treader{b: c.pathRaw}
	if _, n := r.list(); n != len(want) {
		return false
	}
	for _, w := range want {
		if string(r.binary()) != w {
			return false
		}
	}
	return r.err == nil
}
