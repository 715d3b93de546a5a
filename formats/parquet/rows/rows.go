// Package rows decodes the rows of chosen row groups of a Parquet file,
// for feature diffs: only the footer and the column chunks of the row
// groups (and columns) asked for are read from the io.ReaderAt, so a
// reader that fetches chunks on demand fetches only those. Decoding is
// the adapter's own (formats/parquet), not parquet-go's: linking
// parquet-go cost every chunkvc command ~4 ms of start-up and 22 MB of
// binary (issue 27).
//
// Columns are the schema's leaves, named by their dotted paths ("bbox.xmin");
// a value is nil (null), bool, int32, int64, float32, float64, string
// (BYTE_ARRAY with the String, JSON or Enum logical type, and INT96 as the
// decimal of its 96 bits, as parquet-go gave it), []byte or, for a
// repeated leaf, []any of its non-null values. GeoParquet's covering
// columns (the bbox struct the "geo" metadata names) are left out: they
// repeat the geometry.
package rows

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"

	"github.com/chunkvc/chunkvc/formats/parquet"
)

// File is an opened Parquet file.
type File struct {
	r        io.ReaderAt
	f        *parquet.Footer
	keep     []int  // leaf indexes Columns lists, in order
	str      []bool // by leaf: a byte array holding text
	geometry string
}

// Open reads the footer of the Parquet file r (size bytes).
func Open(r io.ReaderAt, size int64) (*File, error) {
	f, err := parquet.ReadFooter(r, size)
	if err != nil {
		return nil, fmt.Errorf("parquet: %w", err)
	}
	pf := &File{r: r, f: f}
	geometry, covering := geoColumns(f)
	pf.geometry = geometry
	for i := range f.Leaves {
		l := &f.Leaves[i]
		pf.str = append(pf.str, isString(l))
		if !covering[l.Path[0]] {
			pf.keep = append(pf.keep, i)
		}
	}
	return pf, nil
}

// logicalNull is the LogicalType member of columns that are always
// null (parquet-go gave them no kind).
const logicalNull = 11

// isString reports whether leaf l holds text, as parquet-go decided it:
// by its logical type (STRING, ENUM, JSON) when that is one parquet-go
// maps to a type (members 1–8, 10–14, 17 and 18), else by its converted
// type (UTF8, ENUM, JSON).
func isString(l *parquet.Leaf) bool {
	switch l.Logical {
	case 1, 4, 12:
		return true
	case 2, 3, 5, 6, 7, 8, 10, 11, 13, 14, 17, 18:
		return false
	}
	return l.Converted == 0 || l.Converted == 4 || l.Converted == 19
}

// geoColumns reads the GeoParquet "geo" metadata: the primary geometry
// column (else a top-level "geometry" column) and the covering columns.
func geoColumns(f *parquet.Footer) (string, map[string]bool) {
	covering := map[string]bool{}
	primary := ""
	if f.Geo != nil {
		var doc struct {
			Primary string `json:"primary_column"`
			Columns map[string]struct {
				Covering map[string]map[string][]string `json:"covering"`
			} `json:"columns"`
		}
		if json.Unmarshal(f.Geo, &doc) == nil {
			primary = doc.Primary
			for _, c := range doc.Columns {
				for _, cov := range c.Covering {
					for _, p := range cov {
						if len(p) > 0 {
							covering[p[0]] = true
						}
					}
				}
			}
		}
	}
	if primary == "" {
		for _, l := range f.Leaves {
			if len(l.Path) == 1 && l.Path[0] == "geometry" {
				primary = "geometry"
			}
		}
	}
	return primary, covering
}

// Columns lists the columns Read returns, in order (covering columns
// left out).
func (f *File) Columns() []string {
	out := make([]string, len(f.keep))
	for i, k := range f.keep {
		out[i] = f.f.Leaves[k].Name()
	}
	return out
}

// Geometry is the primary geometry column (WKB), "" when there is none.
func (f *File) Geometry() string { return f.geometry }

// RowGroups is the number of row groups.
func (f *File) RowGroups() int { return f.f.RowGroups() }

// KeyKind reports whether column name is a non-repeated integer or
// string leaf, the kinds a key may have.
func (f *File) KeyKind(name string) bool {
	for i := range f.f.Leaves {
		l := &f.f.Leaves[i]
		if l.Name() != name || l.MaxRep > 0 || l.Logical == logicalNull {
			continue
		}
		switch l.Type {
		case parquet.TypeInt32, parquet.TypeInt64:
			return true
		case parquet.TypeByteArray:
			return f.str[i]
		}
	}
	return false
}

// column decodes leaf j of row group i.
func (f *File) column(i, j int) (*parquet.Column, error) {
	leaf := &f.f.Leaves[j]
	chunk, codec, err := f.f.ColumnChunk(f.r, i, j)
	if err == nil {
		var c *parquet.Column
		if c, err = parquet.DecodeColumn(chunk, codec, leaf); err == nil {
			return c, nil
		}
	}
	return nil, fmt.Errorf("parquet: row group %d column %s: %w", i, leaf.Name(), err)
}

// maxCells bounds the values (rows × columns) Read returns for one row
// group, whatever its column chunks claim: a hostile file of many
// all-null columns cannot make it allocate without limit.
const maxCells = 1 << 26

// Read decodes the rows of row group i: values in Columns order.
func (f *File) Read(i int) ([][]any, error) {
	if i < 0 || i >= f.f.RowGroups() {
		return nil, fmt.Errorf("parquet: row group %d of %d", i, f.f.RowGroups())
	}
	var out [][]any
	k := len(f.keep)
	for pos, j := range f.keep {
		l := &f.f.Leaves[j]
		c, err := f.column(i, j)
		if err != nil {
			return nil, err
		}
		n := rowCount(l, c)
		if pos == 0 {
			if int64(n)*int64(k) > maxCells {
				return nil, fmt.Errorf("parquet: row group %d: %d rows of %d columns: %w (over %d values)", i, n, k, parquet.ErrUnsupported, maxCells)
			}
			// One backing array for every row, each row capped.
			cells := make([]any, n*k)
			out = make([][]any, n)
			for r := range out {
				out[r] = cells[r*k : (r+1)*k : (r+1)*k]
			}
		}
		if n != len(out) {
			return nil, fmt.Errorf("parquet: row group %d: column %s has %d rows, %s %d",
				i, l.Name(), n, f.f.Leaves[f.keep[0]].Name(), len(out))
		}
		if err := f.fill(j, c, func(r int, v any) { out[r][pos] = v }); err != nil {
			return nil, fmt.Errorf("parquet: row group %d column %s: %w", i, l.Name(), err)
		}
	}
	return out, nil
}

// rowCount is the number of rows column chunk c of leaf l holds.
func rowCount(l *parquet.Leaf, c *parquet.Column) int {
	switch {
	case l.MaxRep > 0:
		n := 0
		for _, r := range c.Rep {
			if r == 0 {
				n++
			}
		}
		return n
	case l.MaxDef > 0:
		return len(c.Def)
	}
	return len(c.Values)
}

// fill gives put the value of each row r of leaf j (column chunk c) that
// is not null: for a repeated leaf, the []any of its non-null values.
func (f *File) fill(j int, c *parquet.Column, put func(r int, v any)) error {
	l := &f.f.Leaves[j]
	next := 0
	take := func() (any, error) {
		if next >= len(c.Values) {
			return nil, errors.New("fewer values than the levels say")
		}
		next++
		return f.value(j, c.Values[next-1]), nil
	}
	switch {
	case l.MaxRep > 0:
		row, list := -1, []any(nil)
		for s := range c.Def {
			if c.Rep[s] == 0 {
				if row >= 0 {
					put(row, list)
				}
				row, list = row+1, []any{}
			} else if row < 0 {
				return errors.New("the first value continues a row")
			}
			if int(c.Def[s]) == l.MaxDef {
				v, err := take()
				if err != nil {
					return err
				}
				list = append(list, v)
			}
		}
		if row >= 0 {
			put(row, list)
		}
	case l.MaxDef > 0:
		for s, d := range c.Def {
			if int(d) == l.MaxDef {
				v, err := take()
				if err != nil {
					return err
				}
				put(s, v)
			}
		}
	default:
		for s := range c.Values {
			v, _ := take()
			put(s, v)
		}
	}
	if next != len(c.Values) {
		return fmt.Errorf("%d values where the levels say %d", len(c.Values), next)
	}
	return nil
}

// value is a decoded value as Read gives it.
func (f *File) value(j int, v any) any {
	b, ok := v.([]byte)
	switch {
	case !ok:
		return v
	case f.f.Leaves[j].Type == parquet.TypeInt96:
		return int96(b)
	case f.str[j]:
		return string(b)
	}
	return b
}

// int96 is the decimal parquet-go gave an INT96 value: its three
// little-endian 32-bit words w2:w1:w0, with w2:w1 read as an int64.
func int96(b []byte) string {
	w0, w1, w2 := binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:]), binary.LittleEndian.Uint32(b[8:])
	z := big.NewInt(int64(w2)<<32 | int64(w1))
	z.Lsh(z, 32)
	return z.Or(z, big.NewInt(int64(w0))).String()
}

// leaf returns the index of leaf column name, -1 when there is none.
func (f *File) leaf(name string) int {
	for i := range f.f.Leaves {
		if f.f.Leaves[i].Name() == name {
			return i
		}
	}
	return -1
}

// Bounds returns the min and max of column name in row group i from the
// footer's statistics (as Read would give them); ok is false when the
// writer recorded none. Nothing past the footer is read.
func (f *File) Bounds(i int, name string) (lo, hi any, ok bool) {
	j := f.leaf(name)
	if j < 0 || i < 0 || i >= f.f.RowGroups() {
		return nil, nil, false
	}
	min, max, ok := f.f.Stats(i, j)
	if !ok {
		return nil, nil, false
	}
	lo, okLo := f.stat(j, min)
	hi, okHi := f.stat(j, max)
	return lo, hi, okLo && okHi
}

// stat decodes a plain-encoded statistic of leaf j.
func (f *File) stat(j int, b []byte) (any, bool) {
	var v any
	switch w := len(b); f.f.Leaves[j].Type {
	case parquet.TypeBoolean:
		v = w == 1 && b[0] != 0
		return v, w == 1
	case parquet.TypeInt32:
		if w != 4 {
			return nil, false
		}
		v = int32(binary.LittleEndian.Uint32(b))
	case parquet.TypeInt64:
		if w != 8 {
			return nil, false
		}
		v = int64(binary.LittleEndian.Uint64(b))
	case parquet.TypeFloat:
		if w != 4 {
			return nil, false
		}
		v = math.Float32frombits(binary.LittleEndian.Uint32(b))
	case parquet.TypeDouble:
		if w != 8 {
			return nil, false
		}
		v = math.Float64frombits(binary.LittleEndian.Uint64(b))
	case parquet.TypeInt96:
		if w != 12 {
			return nil, false
		}
		v = append([]byte(nil), b...)
	case parquet.TypeByteArray, parquet.TypeFixedLenByteArray:
		v = append([]byte(nil), b...)
	default:
		return nil, false
	}
	return f.value(j, v), true
}

// ColumnValues decodes column name of row group i alone (its column
// chunk is all that is read), nulls left out.
func (f *File) ColumnValues(i int, name string) ([]any, error) {
	j := f.leaf(name)
	if j < 0 || i < 0 || i >= f.f.RowGroups() {
		return nil, fmt.Errorf("parquet: no column %q in row group %d", name, i)
	}
	c, err := f.column(i, j)
	if err != nil {
		return nil, err
	}
	for k, v := range c.Values {
		c.Values[k] = f.value(j, v)
	}
	return c.Values, nil
}
