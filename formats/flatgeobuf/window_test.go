package flatgeobuf

import (
	"bytes"
	"io"
	"math/rand"
	"testing"
)

// countingReaderAt counts the bytes read through it.
type countingReaderAt struct {
	r    io.ReaderAt
	read int64
}

func (c *countingReaderAt) ReadAt(b []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(b, off)
	c.read += int64(n)
	return n, err
}

// Records read in an order of their own (a merge's, Hilbert-sorted) cost
// about their bytes, not a window per jump; read in file order, a window
// serves many. A merge of 200k points whose extent changed read 7 GB of a
// 28 MB file before.
func TestWindowReaderJumps(t *testing.T) {
	const recs, size = 20000, 100
	data := make([]byte, recs*size)
	rand.New(rand.NewSource(1)).Read(data)
	for _, tc := range []struct {
		name  string
		order []int
		most  int64
	}{
		{"shuffled", rand.New(rand.NewSource(2)).Perm(recs), 2 * int64(len(data))},
		{"in order", identity(recs), int64(len(data)) * 101 / 100}, // records across a window's end are read again
	} {
		c := &countingReaderAt{r: bytes.NewReader(data)}
		w := &windowReader{r: c, size: int64(len(data))}
		for _, i := range tc.order {
			b, err := w.get(int64(i*size), size)
			if err != nil || !bytes.Equal(b, data[i*size:(i+1)*size]) {
				t.Fatalf("%s: record %d read wrong (%v)", tc.name, i, err)
			}
		}
		if c.read > tc.most {
			t.Errorf("%s: %d bytes read for %d of records; want at most %d", tc.name, c.read, len(data), tc.most)
		}
	}
}

func identity(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
