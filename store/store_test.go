package store

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/chunkvc/chunkvc/hashing"
)

// sized is a reader that states a size, right or wrong, as store readers
// over a file section or decoded bytes do.
type sized struct {
	io.Reader
	size int64
}

func (s sized) Size() int64  { return s.size }
func (s sized) Close() error { return nil }

// oneReader is a Getter that hands out one reader.
type oneReader struct{ rc io.ReadCloser }

func (g oneReader) Get(context.Context, hashing.ID, int64, int64) (io.ReadCloser, error) {
	return g.rc, nil
}

// TestReadAllSized: a reader whose stated size is wrong gives a corrupt
// object, never a short or long one; right, and unsized, it reads whole.
func TestReadAllSized(t *testing.T) {
	data := bytes.Repeat([]byte("chunk"), 1000)
	id := hashing.Sum(data)
	for _, c := range []struct {
		name    string
		rc      io.ReadCloser
		corrupt bool
	}{
		{"exact", sized{bytes.NewReader(data), int64(len(data))}, false},
		{"unsized", io.NopCloser(bytes.NewReader(data)), false},
		{"short", sized{bytes.NewReader(data[:len(data)-7]), int64(len(data))}, true},
		{"long", sized{bytes.NewReader(append(bytes.Clone(data), 'x')), int64(len(data))}, true},
	} {
		got, err := ReadAll(context.Background(), oneReader{c.rc}, id)
		if c.corrupt {
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s: %v, want ErrCorrupt", c.name, err)
			}
			continue
		}
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s: %d bytes, %v", c.name, len(got), err)
		}
	}
}
