package rows

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	pq "github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/encoding"

	"github.com/chunkvc/chunkvc/formats/formattest"
	"github.com/chunkvc/chunkvc/formats/parquet"
)

// Differential tests: the adapter's decoder (Open, Read, Bounds,
// ColumnValues) gives what parquet-go gave (ref_test.go), on files
// parquet-go writes with every physical type, repetition, encoding and
// codec it can, and on every Parquet file of the corpus.

// genType is a leaf type and how to make its values.
type genType struct {
	name string
	node func() pq.Node
	val  func(r *rand.Rand) pq.Value
}

// word is a short byte string from a small alphabet, so that dictionaries
// and shared prefixes occur.
func word(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = "abcd\x00\xff"[r.Intn(6)]
	}
	return b
}

var genTypes = []genType{
	{"bool", func() pq.Node { return pq.Leaf(pq.BooleanType) }, func(r *rand.Rand) pq.Value { return pq.BooleanValue(r.Intn(3) == 0) }},
	{"int32", func() pq.Node { return pq.Leaf(pq.Int32Type) }, func(r *rand.Rand) pq.Value {
		if r.Intn(2) == 0 {
			return pq.Int32Value(int32(r.Uint32()))
		}
		return pq.Int32Value(int32(r.Intn(20) - 10))
	}},
	{"int64", func() pq.Node { return pq.Leaf(pq.Int64Type) }, func(r *rand.Rand) pq.Value {
		if r.Intn(2) == 0 {
			return pq.Int64Value(int64(r.Uint64()))
		}
		return pq.Int64Value(int64(r.Intn(20) - 10))
	}},
	{"int96", func() pq.Node { return pq.Leaf(pq.Int96Type) }, func(r *rand.Rand) pq.Value {
		return pq.Int96Value(deprecated.Int96{r.Uint32(), r.Uint32(), r.Uint32() >> uint(r.Intn(2)*31)})
	}},
	{"float", func() pq.Node { return pq.Leaf(pq.FloatType) }, func(r *rand.Rand) pq.Value { return pq.FloatValue(float32(r.NormFloat64())) }},
	{"double", func() pq.Node { return pq.Leaf(pq.DoubleType) }, func(r *rand.Rand) pq.Value { return pq.DoubleValue(float64(r.Intn(5)) / 3) }},
	{"bytes", func() pq.Node { return pq.Leaf(pq.ByteArrayType) }, func(r *rand.Rand) pq.Value { return pq.ByteArrayValue(word(r, r.Intn(12))) }},
	{"string", pq.String, func(r *rand.Rand) pq.Value { return pq.ByteArrayValue([]byte("name-" + string(word(r, r.Intn(4))))) }},
	{"flba", func() pq.Node { return pq.Leaf(pq.FixedLenByteArrayType(5)) }, func(r *rand.Rand) pq.Value { return pq.FixedLenByteArrayValue(word(r, 5)) }},
}

var genEncodings = []encoding.Encoding{&pq.Plain, &pq.RLE, &pq.PlainDictionary, &pq.RLEDictionary,
	&pq.DeltaBinaryPacked, &pq.DeltaLengthByteArray, &pq.DeltaByteArray, &pq.ByteStreamSplit}

// genCol is one column of a generated file: a top-level leaf (required,
// optional or repeated) or, when nested, s.a (optional in an optional
// group) or a three-level LIST of optional strings.
type genCol struct {
	name string
	t    genType
	rep  int // 0 required, 1 optional, 2 repeated
}

// encoded returns node in encoding e, false when parquet-go cannot
// write that encoding for the node's type.
func encoded(node pq.Node, e encoding.Encoding) (n pq.Node, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return pq.Encoded(node, e), true
}

// genSchema builds a group of every type × repetition × encoding
// parquet-go takes, plus the nested columns.
func genSchema() (pq.Group, []genCol) {
	g := pq.Group{}
	var cols []genCol
	for _, t := range genTypes {
		for _, e := range genEncodings {
			for rep, wrap := range []func(pq.Node) pq.Node{func(n pq.Node) pq.Node { return n }, pq.Optional, pq.Repeated} {
				n, ok := encoded(t.node(), e)
				if !ok || e == &pq.RLE && t.name != "bool" { // RLE values are for booleans only

					continue
				}
				name := fmt.Sprintf("%s_%s_%d", t.name, strings.ToLower(e.String()), rep)
				g[name] = wrap(n)
				cols = append(cols, genCol{name: name, t: t, rep: rep})
			}
		}
	}
	g["s"] = pq.Optional(pq.Group{"a": pq.Optional(pq.Leaf(pq.Int64Type))})
	g["l"] = pq.Optional(pq.Group{"list": pq.Repeated(pq.Group{"element": pq.Optional(pq.String())})})
	cols = append(cols, genCol{name: "s.a", t: genTypes[2], rep: 3}, genCol{name: "l.list.element", t: genTypes[7], rep: 4})
	return g, cols
}

// genValues makes one row's values of column c (column index ci).
func genValues(r *rand.Rand, c genCol, ci int) []pq.Value {
	null := func(rep, def int) pq.Value { return pq.Value{}.Level(rep, def, ci) }
	switch c.rep {
	case 0:
		return []pq.Value{c.t.val(r).Level(0, 0, ci)}
	case 1:
		if r.Intn(5) == 0 {
			return []pq.Value{null(0, 0)}
		}
		return []pq.Value{c.t.val(r).Level(0, 1, ci)}
	case 2:
		n := r.Intn(4)
		if n == 0 {
			return []pq.Value{null(0, 0)}
		}
		var out []pq.Value
		for i := range n {
			out = append(out, c.t.val(r).Level(min(i, 1), 1, ci))
		}
		return out
	case 3: // s.a: struct null, a null, a set
		if d := r.Intn(3); d < 2 {
			return []pq.Value{null(0, d)}
		}
		return []pq.Value{c.t.val(r).Level(0, 2, ci)}
	}
	// l.list.element: list null, empty, or elements some null
	switch n := r.Intn(5) - 1; {
	case n < 0:
		return []pq.Value{null(0, 0)}
	case n == 0:
		return []pq.Value{null(0, 1)}
	default:
		var out []pq.Value
		for i := range n {
			if r.Intn(4) == 0 {
				out = append(out, null(min(i, 1), 2))
			} else {
				out = append(out, c.t.val(r).Level(min(i, 1), 3, ci))
			}
		}
		return out
	}
}

// genFile writes rows rows of every generated column with codec, in data
// pages of version v, small pages and row groups of 70 rows.
func genFile(t testing.TB, codec compress.Codec, v int, rows int, seed int64) ([]byte, []pq.Row) {
	t.Helper()
	g, cols := genSchema()
	schema := pq.NewSchema("gen", g)
	index := map[string]int{}
	for i, p := range schema.Columns() {
		index[strings.Join(p, ".")] = i
	}
	r := rand.New(rand.NewSource(seed))
	var buf bytes.Buffer
	var written []pq.Row
	w := pq.NewWriter(&buf, schema, pq.Compression(codec), pq.DataPageVersion(v),
		pq.PageBufferSize(512), pq.MaxRowsPerRowGroup(70))
	for range rows {
		byCol := make([][]pq.Value, len(cols))
		for _, c := range cols {
			ci := index[c.name]
			byCol[ci] = genValues(r, c, ci)
		}
		var row pq.Row
		for _, vs := range byCol {
			row = append(row, vs...)
		}
		written = append(written, row)
		if _, err := w.WriteRows([]pq.Row{row}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), written
}

// TestDiffGenerated: every codec parquet-go writes, data pages v1 and v2.
func TestDiffGenerated(t *testing.T) {
	codecs := []compress.Codec{&pq.Uncompressed, &pq.Snappy, &pq.Gzip, &pq.Zstd, &pq.Brotli, &pq.Lz4Raw}
	for _, codec := range codecs {
		for _, v := range []int{1, 2} {
			name := fmt.Sprintf("%s-v%d", codec.String(), v)
			t.Run(name, func(t *testing.T) {
				data, written := genFile(t, codec, v, 200, int64(v)*31+int64(len(name)))
				if n := compare(t, data, truth(written, 70), false); n < 3 {
					t.Fatalf("%d row groups compared", n)
				}
			})
		}
	}
}

// TestDiffCorpus: every Parquet file of the corpus.
func TestDiffCorpus(t *testing.T) {
	files := formattest.Corpus(t, ".parquet", ".parq")
	if len(files) == 0 {
		t.Fatal("no Parquet file in the corpus")
	}
	total := 0
	for _, f := range files {
		t.Run(f.Name, func(t *testing.T) { total += compare(t, f.Data, nil, strings.Contains(f.Name, "bad_data")) })
	}
	t.Logf("%d row groups of %d files compared", total, len(files))
	if total == 0 {
		t.Fatal("no row group compared")
	}
}

// truth returns the rows of row group rg as Read should give them, from
// the rows written (per a row group): the reference's own conversion of
// parquet-go values, without parquet-go's reader, which decodes some
// INT96 dictionary pages wrongly.
func truth(written []pq.Row, per int) func(ref *refFile, rg int) [][]any {
	return func(ref *refFile, rg int) [][]any {
		pos := make([]int, len(ref.names))
		for k := range pos {
			pos[k] = k
		}
		var out [][]any
		for _, r := range written[rg*per : min(len(written), (rg+1)*per)] {
			out = append(out, ref.decode(r, pos))
		}
		return out
	}
}

// compare holds Open, Read, Bounds and ColumnValues to the reference on
// data, and returns how many row groups it compared. Where the reference
// fails (or panics) any answer is taken; where it succeeds the decoder
// must give the same values, or fail with ErrUnsupported (broken: any
// error, the file is broken on purpose). With want set
// (generated files), rows and column values are held to it instead of
// the reference's reader.
func compare(t *testing.T, data []byte, want func(ref *refFile, rg int) [][]any, broken bool) int {
	ref, rerr := safe(func() (*refFile, error) { return refOpen(bytes.NewReader(data), int64(len(data))) })
	got, err := Open(bytes.NewReader(data), int64(len(data)))
	if rerr != nil {
		t.Logf("reference cannot open it: %v (ours: %v)", rerr, err)
		return 0
	}
	if err != nil {
		if !errors.Is(err, parquet.ErrUnsupported) && !broken {
			t.Errorf("open: %v, where the reference opens it", err)
		}
		return 0
	}
	if fmt.Sprint(got.Columns(), got.Geometry(), got.RowGroups()) != fmt.Sprint(ref.Columns(), ref.Geometry(), ref.RowGroups()) {
		t.Fatalf("columns %q geometry %q %d row groups; reference %q %q %d",
			got.Columns(), got.Geometry(), got.RowGroups(), ref.Columns(), ref.Geometry(), ref.RowGroups())
	}
	names := got.Columns()
	for _, n := range names {
		if got.KeyKind(n) != ref.KeyKind(n) {
			t.Errorf("KeyKind(%s) %v, reference %v", n, got.KeyKind(n), ref.KeyKind(n))
		}
	}
	compared := 0
	for rg := range got.RowGroups() {
		refRows := func() ([][]any, error) { return safe(func() ([][]any, error) { return ref.Read(rg) }) }
		if want != nil {
			refRows = func() ([][]any, error) { return want(ref, rg), nil }
		}
		rows, err := got.Read(rg)
		if check(t, fmt.Sprintf("row group %d", rg), rows, err, refRows, broken) {
			compared++
		}
		for col, n := range names {
			type bounds struct {
				lo, hi any
				ok     bool
			}
			wb, berr := safe(func() (bounds, error) { lo, hi, ok := ref.Bounds(rg, n); return bounds{lo, hi, ok}, nil })
			if lo, hi, ok := got.Bounds(rg, n); berr == nil && fmt.Sprintf("%#v", bounds{lo, hi, ok}) != fmt.Sprintf("%#v", wb) {
				t.Errorf("row group %d column %s: bounds %#v %#v %v, reference %#v", rg, n, lo, hi, ok, wb)
			}
			refVals := func() ([][]any, error) {
				v, err := safe(func() ([]any, error) { return ref.ColumnValues(rg, n) })
				return [][]any{v}, err
			}
			if want != nil {
				refVals = func() ([][]any, error) { return [][]any{flatten(want(ref, rg), col)}, nil }
			}
			vals, err := got.ColumnValues(rg, n)
			check(t, fmt.Sprintf("row group %d column %s", rg, n), [][]any{vals}, err, refVals, broken)
		}
	}
	return compared
}

// check holds what the decoder gave (got, err) to the reference (ref,
// run only when needed) and reports whether it compared values. An
// ErrUnsupported error is taken (the decoder refuses what it does not
// read); any other error is a failure where the reference decodes the
// file, unless the file is broken on purpose.
func check(t *testing.T, what string, got [][]any, err error, ref func() ([][]any, error), broken bool) bool {
	t.Helper()
	if errors.Is(err, parquet.ErrUnsupported) {
		t.Logf("%s: %v", what, err)
		return false
	}
	want, rerr := ref()
	switch {
	case err != nil && rerr == nil && !broken:
		t.Errorf("%s: %v, where the reference decodes it", what, err)
	case err != nil:
		t.Logf("%s: %v (reference: %v)", what, err, rerr)
	case rerr != nil:
		t.Logf("%s: the reference fails (%v)", what, rerr)
	default:
		same(t, what, got, want)
		return true
	}
	return false
}

// flatten is column col of rows as ColumnValues gives it: repeated
// values one by one, nulls left out.
func flatten(rows [][]any, col int) []any {
	var out []any
	for _, r := range rows {
		switch v := r[col].(type) {
		case nil:
		case []any:
			out = append(out, v...)
		default:
			out = append(out, v)
		}
	}
	return out
}

// same fails the test at the first row that differs (NaN equal to NaN,
// types compared).
func same(t *testing.T, what string, got, want [][]any) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d rows, reference %d", what, len(got), len(want))
		return
	}
	for i := range got {
		if len(got[i]) != len(want[i]) {
			t.Errorf("%s row %d: %d values, reference %d", what, i, len(got[i]), len(want[i]))
			return
		}
		for j := range got[i] {
			if g, w := fmt.Sprintf("%#v", got[i][j]), fmt.Sprintf("%#v", want[i][j]); g != w {
				t.Errorf("%s row %d value %d:\n got  %.300s\n want %.300s", what, i, j, g, w)
				return
			}
		}
	}
}

// safe runs f, turning a panic into an error.
func safe[T any](f func() (T, error)) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return f()
}
