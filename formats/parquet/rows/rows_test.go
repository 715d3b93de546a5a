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
