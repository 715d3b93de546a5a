package flatgeobuf

import (
	"bytes"
	"context"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
)

// FuzzLayout: no panic, no invalid layout on any input. Seeds: the corpus
// FlatGeobuf files (testdata/fuzz holds the crashers found so far).
func FuzzLayout(f *testing.F) {
	formattest.Seeds(f, ".fgb")
	f.Fuzz(func(t *testing.T, data []byte) {
		formattest.Fuzz(t, Adapter{}, data)
		if fs, err := Features(bytes.NewReader(data), int64(len(data))); err == nil && len(fs) > 0 {
			_, _ = BuildIndex(fs, 2)
		}
		if s, err := ReadSchema(bytes.NewReader(data), int64(len(data))); err == nil && s.Records <= int64(len(data)) {
			_ = s.Decode(data[s.Records:], func(int, []any, []byte) error { return nil })
		}
	})
}

// BenchmarkLayout enumerates a GDAL-written FlatGeobuf of 200k points with
// a spatial index (28.5 MB); MB/s is file bytes per second.
func BenchmarkLayout(b *testing.B) {
	_, data := pointsFGB(b, b.TempDir(), "bench", randomPoints(200000, 1), true)
	r := bytes.NewReader(data)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := (Adapter{}).Layout(context.Background(), r, int64(len(data))); err != nil {
			b.Fatal(err)
		}
	}
}
