package rows

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/chunkvc/chunkvc/formats/parquet/pqgen"
)

// Read gives back the rows pqgen wrote into the row group asked for,
// without the covering columns; only that row group's bytes are read.
func TestReadRowGroup(t *testing.T) {
	var groups [][]pqgen.Row
	for g := range 3 {
		var rs []pqgen.Row
		for i := g * 10; i < g*10+10; i++ {
			rs = append(rs, pqgen.Point(int64(i), fmt.Sprint("n", i), float64(i)/2, float64(i), -float64(i)))
		}
		groups = append(groups, rs)
	}
	var b bytes.Buffer
	if err := pqgen.WriteGroups(&b, groups); err != nil {
		t.Fatal(err)
	}
	ra := &countingReader{r: bytes.NewReader(b.Bytes())}
	f, err := Open(ra, int64(b.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if c := fmt.Sprint(f.Columns()); c != "[id name value geometry]" || f.Geometry() != "geometry" || f.RowGroups() != 3 {
		t.Fatalf("columns %s, geometry %q, %d row groups", c, f.Geometry(), f.RowGroups())
	}
	if !f.KeyKind("id") || !f.KeyKind("name") || f.KeyKind("value") || f.KeyKind("nope") {
		t.Errorf("KeyKind id %v name %v value %v", f.KeyKind("id"), f.KeyKind("name"), f.KeyKind("value"))
	}
	opened := ra.n
	vals, err := f.Read(1)
	if err != nil {
		t.Fatal(err)
	}
	if len(vals) != 10 {
		t.Fatalf("%d rows", len(vals))
	}
	for k, v := range vals {
		i := int64(10 + k)
		want := pqgen.Point(i, fmt.Sprint("n", i), float64(i)/2, float64(i), -float64(i))
		if v[0] != i || v[1] != want.Name || v[2] != want.Value || !bytes.Equal(v[3].([]byte), want.Geometry) {
			t.Errorf("row %d: %v", i, v)
		}
	}
	if read := ra.n - opened; read >= int64(b.Len())/2 {
		t.Errorf("reading one row group of three read %d of %d bytes", read, b.Len())
	}
}

type countingReader struct {
	r *bytes.Reader
	n int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n += int64(n)
	return n, err
}

// BenchmarkRead decodes every row of a 4-row-group, 200k-row GeoParquet
// with the adapter's decoder and with parquet-go (the reference).
func BenchmarkRead(b *testing.B) {
	var groups [][]pqgen.Row
	for g := range 4 {
		var rs []pqgen.Row
		for i := g * 50000; i < (g+1)*50000; i++ {
			rs = append(rs, pqgen.Point(int64(i), fmt.Sprint("n", i%97), float64(i)/2, float64(i%1000), -float64(i/1000)))
		}
		groups = append(groups, rs)
	}
	var buf bytes.Buffer
	if err := pqgen.WriteGroups(&buf, groups); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	type reader interface {
		RowGroups() int
		Read(int) ([][]any, error)
	}
	readAll := func(b *testing.B, open func() (reader, error)) {
		for b.Loop() {
			f, err := open()
			if err != nil {
				b.Fatal(err)
			}
			for rg := range f.RowGroups() {
				if _, err := f.Read(rg); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.Run("adapter", func(b *testing.B) {
		readAll(b, func() (reader, error) { return Open(bytes.NewReader(data), int64(len(data))) })
	})
	b.Run("parquet-go", func(b *testing.B) {
		readAll(b, func() (reader, error) { return refOpen(bytes.NewReader(data), int64(len(data))) })
	})
}
