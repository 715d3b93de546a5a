package parquet

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// The row reader's view of a file (package rows, for feature diffs): the
// schema's leaves and their column chunks, decoded by this package's own
// page decoder (values.go) so that the everyday binary links no
// parquet-go (issue 27).

// Physical types (parquet.thrift Type).
const (
	TypeBoolean           = 0
	TypeInt32             = 1
	TypeInt64             = 2
	TypeInt96             = 3
	TypeFloat             = 4
	TypeDouble            = 5
	TypeByteArray         = 6
	TypeFixedLenByteArray = 7
)

// maxLevel bounds a leaf's definition and repetition levels: they are
// decoded into one byte each.
const maxLevel = 255

// Leaf is a leaf column of the schema.
type Leaf struct {
	Path       []string // from the root, the root left out
	Type       int32    // physical type; -1 when the schema gives none
	TypeLength int32    // FIXED_LEN_BYTE_ARRAY's length
	MaxDef     int      // largest definition level
	MaxRep     int      // largest repetition level
	Logical    int16    // member of the LogicalType union set; 0 for none
	Converted  int32    // converted_type; -1 for none
}

// Name is the leaf's dotted path.
func (l *Leaf) Name() string { return strings.Join(l.Path, ".") }

// Footer is a Parquet file's footer, decoded for reading rows.
type Footer struct {
	Leaves  []Leaf
	Geo     []byte // the "geo" key's value; nil when there is none
	m       *fileMeta
	dataEnd int64
}

// ReadFooter reads and decodes the footer of the Parquet file r (size
// bytes); nothing else is read. Row groups whose column chunks do not
// match the schema's leaves are an error.
func ReadFooter(r io.ReaderAt, size int64) (*Footer, error) {
	m, dataEnd, err := openFooter(r, size)
	if err != nil {
		return nil, err
	}
	leaves, err := schemaLeaves(m.schemaRaw)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	for i := range m.rowGroups {
		if n := len(m.rowGroups[i].cols); n != len(leaves) {
			return nil, fmt.Errorf("row group %d has %d column chunks for %d leaf columns", i, n, len(leaves))
		}
	}
	f := &Footer{Leaves: leaves, m: m, dataEnd: dataEnd}
	if m.hasGeo {
		f.Geo = m.geo
	}
	return f, nil
}

// RowGroups is the number of row groups.
func (f *Footer) RowGroups() int { return len(f.m.rowGroups) }

// RowGroupRows is the number of rows of row group i.
func (f *Footer) RowGroupRows(i int) int64 { return f.m.rowGroups[i].numRows }

// Stats returns the min_value and max_value statistics (plain-encoded)
// of leaf j in row group i; ok is false when either is missing.
func (f *Footer) Stats(i, j int) (lo, hi []byte, ok bool) {
	c := &f.m.rowGroups[i].cols[j]
	return c.minValue, c.maxValue, c.minValue != nil && c.maxValue != nil
}

// ColumnChunk reads the bytes of leaf j's column chunk in row group i,
// after checking that they lie in the data area and within the decode
// limits, and returns them with their codec.
func (f *Footer) ColumnChunk(r io.ReaderAt, i, j int) (chunk []byte, codec int32, err error) {
	c := &f.m.rowGroups[i].cols[j]
	leaf := &f.Leaves[j]
	start := c.start()
	switch {
	case !c.samePath(leaf.Path):
		return nil, 0, fmt.Errorf("column chunk %d has path %q, not the schema's %s", j, c.components(), leaf.Name())
	case c.external:
		return nil, 0, errors.New("column chunk is in another file (file_path set)")
	case c.crypto:
		return nil, 0, errors.New("column chunk is encrypted")
	case !c.hasMeta:
		return nil, 0, errors.New("column chunk has no metadata")
	case c.typ != leaf.Type:
		return nil, 0, fmt.Errorf("column chunk of type %s, schema says %s", typeName(c.typ), typeName(leaf.Type))
	case c.totalCompressed < 0 || start < 4 || start > f.dataEnd || c.totalCompressed > f.dataEnd-start:
		return nil, 0, fmt.Errorf("column chunk (bytes %d..+%d) lies outside the data area [4, %d)", start, c.totalCompressed, f.dataEnd)
	case c.totalCompressed > maxDecodeChunk:
		return nil, 0, fmt.Errorf("column chunk of %d bytes is over the %d-byte decode limit", c.totalCompressed, maxDecodeChunk)
	}
	chunk = make([]byte, c.totalCompressed)
	if err := readAt(r, chunk, start); err != nil {
		return nil, 0, err
	}
	return chunk, c.codec, nil
}

// start is where the column chunk's pages begin: its dictionary page
// when that comes first.
func (c *column) start() int64 {
	if c.dictPage > 0 && c.dictPage < c.dataPage {
		return c.dictPage
	}
	return c.dataPage
}

// group is a schema group being read: its path, levels and the children
// still to come.
type group struct {
	path     []string
	def, rep int
	left     int32
}

// schemaLeaves decodes the SchemaElement list (schemaRaw, as decodeFooter
// kept it) into the leaves, in order, with their paths and levels.
func schemaLeaves(raw []byte) ([]Leaf, error) {
	r := &treader{b: raw, depth: 1}
	elem, n := r.list()
	if elem != tStruct || n == 0 {
		return nil, errors.New("no schema elements")
	}
	var leaves []Leaf
	var open []group
	for i := 0; i < n && r.err == nil; i++ {
		e := r.schemaElement()
		if i == 0 {
			open = append(open, group{left: e.children})
			continue
		}
		if len(open) == 0 {
			return nil, fmt.Errorf("element %d (%s) lies outside the root", i, e.name)
		}
		parent := &open[len(open)-1]
		parent.left--
		def, rep := parent.def, parent.rep
		if e.rep == 1 || e.rep == 2 {
			def++
		}
		if e.rep == 2 {
			rep++
		}
		path := append(append([]string(nil), parent.path...), e.name)
		if def > maxLevel || rep > maxLevel {
			return nil, fmt.Errorf("%s nests over %d levels", strings.Join(path, "."), maxLevel)
		}
		if e.children > 0 {
			open = append(open, group{path: path, def: def, rep: rep, left: e.children})
		} else {
			leaves = append(leaves, Leaf{Path: path, Type: e.typ, TypeLength: e.typeLength,
				MaxDef: def, MaxRep: rep, Logical: e.logical, Converted: e.converted})
		}
		for len(open) > 0 && open[len(open)-1].left <= 0 {
			open = open[:len(open)-1]
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	if len(open) > 0 {
		return nil, errors.New("schema ends inside a group")
	}
	return leaves, nil
}

// element is the part of a SchemaElement schemaLeaves uses.
type element struct {
	typ, typeLength, rep, children, converted int32
	name                                      string
	logical                                   int16
}

// schemaElement reads a SchemaElement: 1 type, 2 type_length,
// 3 repetition_type, 4 name, 5 num_children, 6 converted_type,
// 10 logicalType.
func (r *treader) schemaElement() element {
	e := element{typ: -1, rep: -1, converted: -1}
	var last int16
	for r.err == nil {
		t, id := r.field(&last)
		if t == tStop {
			break
		}
		switch {
		case id == 1 && t == tI32:
			e.typ = r.i32()
		case id == 2 && t == tI32:
			e.typeLength = r.i32()
		case id == 3 && t == tI32:
			e.rep = r.i32()
		case id == 4 && t == tBinary:
			e.name = string(r.binary())
		case id == 5 && t == tI32:
			e.children = r.i32()
		case id == 6 && t == tI32:
			e.converted = r.i32()
		case id == 10 && t == tStruct:
			e.logical = r.unionMember()
		default:
			r.skipField(t)
		}
	}
	return e
}

// unionMember reads a Thrift union and returns the id of its member set.
func (r *treader) unionMember() int16 {
	var member, last int16
	for r.err == nil {
		t, id := r.field(&last)
		if t == tStop {
			break
		}
		member = id
		r.skipField(t)
	}
	return member
}

// typeName names physical type t for messages.
func typeName(t int32) string {
	names := []string{"BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"}
	if t >= 0 && int(t) < len(names) {
		return names[t]
	}
	return fmt.Sprintf("type %d", t)
}
