package rows

// The row reader this package had before issue 27, on parquet-go, kept
// as the reference the differential tests (diff_test.go) hold the
// adapter's decoder to.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

type refFile struct {
	f        *parquet.File
	names    []string // every leaf, dotted
	keep     []int    // leaf indexes Columns lists, in order
	repeated []bool   // by leaf
	str      []bool   // by leaf: BYTE_ARRAY holding UTF-8
	geometry string
}

// refOpen is the old Open.
func refOpen(r io.ReaderAt, size int64) (*refFile, error) {
	f, err := parquet.OpenFile(r, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, fmt.Errorf("parquet: %w", err)
	}
	pf := &refFile{f: f}
	geometry, covering := refGeoColumns(f)
	pf.geometry = geometry
	for i, path := range f.Schema().Columns() {
		name := strings.Join(path, ".")
		pf.names = append(pf.names, name)
		leaf, _ := f.Schema().Lookup(path...)
		pf.repeated = append(pf.repeated, leaf.MaxRepetitionLevel > 0)
		isStr := false
		if leaf.Node != nil {
			isStr = refIsString(leaf.Node.Type().LogicalType())
		}
		pf.str = append(pf.str, isStr)
		if !covering[path[0]] {
			pf.keep = append(pf.keep, i)
		}
	}
	return pf, nil
}

// isString reports whether a BYTE_ARRAY of logical type lt holds text.
func refIsString(lt *format.LogicalType) bool {
	if lt == nil {
		return false
	}
	switch lt.Value.(type) {
	case *format.StringType, *format.JsonType, *format.EnumType:
		return true
	}
	return false
}

// geoColumns reads the GeoParquet "geo" metadata: the primary geometry
// column (else a top-level "geometry" column) and the covering columns.
func refGeoColumns(f *parquet.File) (string, map[string]bool) {
	covering := map[string]bool{}
	primary := ""
	if s, ok := f.Lookup("geo"); ok {
		var doc struct {
			Primary string `json:"primary_column"`
			Columns map[string]struct {
				Covering map[string]map[string][]string `json:"covering"`
			} `json:"columns"`
		}
		if json.Unmarshal([]byte(s), &doc) == nil {
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
		if _, ok := f.Schema().Lookup("geometry"); ok {
			primary = "geometry"
		}
	}
	return primary, covering
}

// Columns lists the columns Read returns, in order (covering columns
// left out).
func (f *refFile) Columns() []string {
	out := make([]string, len(f.keep))
	for i, k := range f.keep {
		out[i] = f.names[k]
	}
	return out
}

// Geometry is the primary geometry column (WKB), "" when there is none.
func (f *refFile) Geometry() string { return f.geometry }

// RowGroups is the number of row groups.
func (f *refFile) RowGroups() int { return len(f.f.RowGroups()) }

// KeyKind reports whether column name is a non-repeated integer or
// string leaf, the kinds a key may have.
func (f *refFile) KeyKind(name string) bool {
	for i, n := range f.names {
		if n != name || f.repeated[i] {
			continue
		}
		leaf, _ := f.f.Schema().Lookup(strings.Split(name, ".")...)
		switch leaf.Node.Type().Kind() {
		case parquet.Int32, parquet.Int64:
			return true
		case parquet.ByteArray:
			return f.str[i]
		}
	}
	return false
}

// Read decodes the rows of row group i: values in Columns order.
func (f *refFile) Read(i int) (out [][]any, err error) {
	rgs := f.f.RowGroups()
	if i < 0 || i >= len(rgs) {
		return nil, fmt.Errorf("parquet: row group %d of %d", i, len(rgs))
	}
	rows := rgs[i].Rows()
	defer func() {
		if cerr := rows.Close(); err == nil && cerr != nil {
			out, err = nil, fmt.Errorf("parquet: row group %d: %w", i, cerr)
		}
	}()
	pos := make([]int, len(f.names)) // leaf → index in Columns, -1 = dropped
	for k := range pos {
		pos[k] = -1
	}
	for j, k := range f.keep {
		pos[k] = j
	}
	buf := make([]parquet.Row, 128)
	for {
		n, err := rows.ReadRows(buf)
		for _, r := range buf[:n] {
			out = append(out, f.decode(r, pos))
		}
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("parquet: row group %d: %w", i, err)
		}
	}
}

// decode turns one parquet-go row into values in Columns order.
func (f *refFile) decode(r parquet.Row, pos []int) []any {
	vals := make([]any, len(f.keep))
	for _, v := range r {
		c := v.Column()
		if c < 0 || c >= len(pos) || pos[c] < 0 {
			continue
		}
		x := f.value(c, v)
		if !f.repeated[c] {
			vals[pos[c]] = x
			continue
		}
		l, _ := vals[pos[c]].([]any)
		if !v.IsNull() {
			vals[pos[c]] = append(l, x)
		} else if l == nil {
			vals[pos[c]] = []any{}
		}
	}
	return vals
}

func (f *refFile) value(c int, v parquet.Value) any {
	if v.IsNull() {
		return nil
	}
	switch v.Kind() {
	case parquet.Boolean:
		return v.Boolean()
	case parquet.Int32:
		return v.Int32()
	case parquet.Int64:
		return v.Int64()
	case parquet.Float:
		return v.Float()
	case parquet.Double:
		return v.Double()
	case parquet.ByteArray, parquet.FixedLenByteArray:
		if f.str[c] {
			return string(v.ByteArray())
		}
		return append([]byte(nil), v.ByteArray()...)
	}
	return v.String()
}

// leaf returns the index of leaf column name, -1 when there is none.
func (f *refFile) leaf(name string) int {
	for i, n := range f.names {
		if n == name {
			return i
		}
	}
	return -1
}

// Bounds returns the min and max of column name in row group i from the
// footer's statistics (as Read would give them); ok is false when the
// writer recorded none. Nothing past the footer is read.
func (f *refFile) Bounds(i int, name string) (lo, hi any, ok bool) {
	c := f.leaf(name)
	rgs := f.f.RowGroups()
	if c < 0 || i < 0 || i >= len(rgs) {
		return nil, nil, false
	}
	cc, isFile := rgs[i].ColumnChunks()[c].(*parquet.FileColumnChunk)
	if !isFile {
		return nil, nil, false
	}
	min, max, ok := cc.Bounds()
	if !ok || min.IsNull() || max.IsNull() {
		return nil, nil, false
	}
	return f.value(c, min), f.value(c, max), true
}

// ColumnValues decodes column name of row group i alone (its column
// chunk is all that is read), nulls left out.
func (f *refFile) ColumnValues(i int, name string) (out []any, err error) {
	c := f.leaf(name)
	rgs := f.f.RowGroups()
	if c < 0 || i < 0 || i >= len(rgs) {
		return nil, fmt.Errorf("parquet: no column %q in row group %d", name, i)
	}
	pages := rgs[i].ColumnChunks()[c].Pages()
	defer func() {
		if cerr := pages.Close(); err == nil && cerr != nil {
			out, err = nil, cerr
		}
	}()
	buf := make([]parquet.Value, 512)
	for {
		p, err := pages.ReadPage()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("parquet: row group %d column %s: %w", i, name, err)
		}
		vr := p.Values()
		for {
			n, err := vr.ReadValues(buf)
			for _, v := range buf[:n] {
				if !v.IsNull() {
					out = append(out, f.value(c, v))
				}
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("parquet: row group %d column %s: %w", i, name, err)
			}
		}
	}
}
