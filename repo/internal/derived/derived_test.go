package derived

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/hashing"
)

// writes is a StreamDeriver that writes the given pieces, in order, of
// what Derive returns (the file's bytes, or other bytes when wrong).
type writes struct {
	wrong  bool
	pieces [][2]int64 // [from, to) of the segment
}

func (d writes) Derive(ctx context.Context, r io.ReaderAt, size int64, s formats.Segment) ([]byte, error) {
	b := make([]byte, s.Len)
	if _, err := r.ReadAt(b, s.Off); err != nil {
		return nil, err
	}
	if d.wrong && len(b) > 0 {
		b[len(b)/2] ^= 1
	}
	return b, nil
}

func (d writes) DeriveTo(ctx context.Context, r io.ReaderAt, size int64, s formats.Segment, w io.WriterAt) error {
	b, err := d.Derive(ctx, r, size, s)
	if err != nil {
		return err
	}
	for _, p := range d.pieces {
		if _, err := w.WriteAt(b[p[0]:p[1]], p[0]); err != nil {
			return err
		}
	}
	return nil
}

// wholeOnly hides DeriveTo: the check compares Derive's bytes instead.
type wholeOnly struct{ writes }

func (d wholeOnly) DeriveTo() {}

func TestDerives(t *testing.T) {
	file := bytes.Repeat([]byte("0123456789"), 10)
	r := bytes.NewReader(file)
	seg := formats.Segment{Off: 20, Len: 50, Derive: "x"}
	for _, tc := range []struct {
		name string
		d    formats.Deriver
		want bool
	}{
		{"stream, in order", writes{pieces: [][2]int64{{0, 20}, {20, 50}}}, true},
		{"stream, out of order", writes{pieces: [][2]int64{{30, 50}, {0, 10}, {10, 30}}}, true},
		{"stream, a gap", writes{pieces: [][2]int64{{0, 20}, {21, 50}}}, false},
		{"stream, overlapping", writes{pieces: [][2]int64{{0, 30}, {20, 50}}}, false},
		{"stream, a byte twice", writes{pieces: [][2]int64{{0, 50}, {49, 50}}}, false},
		{"stream, wrong bytes", writes{wrong: true, pieces: [][2]int64{{0, 50}}}, false},
		{"whole", wholeOnly{writes{}}, true},
		{"whole, wrong bytes", wholeOnly{writes{wrong: true}}, false},
	} {
		got, err := Derives(context.Background(), tc.d, r, int64(len(file)), seg)
		if err != nil || got != tc.want {
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}

// A segment that derives keeps its place and is hashed whole and by
// part; one that does not becomes content-defined chunks over its bytes.
func TestCheck(t *testing.T) {
	file := bytes.Repeat([]byte("0123456789"), 100)
	seg := formats.Segment{Off: 100, Len: 300, Derive: "x"}
	layout := func() *formats.Layout {
		return &formats.Layout{Format: "t", Segments: []formats.Segment{{Off: 0, Len: 100}, seg, {Off: 400, Len: 600}}}
	}
	l := layout()
	hashes, err := Check(context.Background(), writes{pieces: [][2]int64{{0, 300}}}, l, bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	if h := hashes[100]; h.ID != hashing.Sum(file[100:400]) || len(h.Parts) != 0 || len(l.Segments) != 3 {
		t.Fatalf("a segment that derives: %+v, segments %v", h, l.Segments)
	}
	l = layout()
	hashes, err = Check(context.Background(), writes{wrong: true, pieces: [][2]int64{{0, 300}}}, l, bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	if len(hashes) != 0 {
		t.Fatalf("a segment that does not derive was hashed: %v", hashes)
	}
	var at int64
	for _, s := range l.Segments {
		if s.Off != at || s.IsDerived() {
			t.Fatalf("segments after the refusal: %v", l.Segments)
		}
		at += s.Len
	}
	if at != int64(len(file)) {
		t.Fatalf("segments cover %d bytes of %d", at, len(file))
	}
	// No Deriver at all: the same.
	l = layout()
	if _, err := Check(context.Background(), nil, l, bytes.NewReader(file), int64(len(file))); err != nil || l.Segments[1].IsDerived() {
		t.Fatalf("no Deriver: %v, %v", err, l.Segments)
	}
}
