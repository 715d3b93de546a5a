package flatgeobuf

import (
	"bytes"
	"context"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
)

// FuzzLayout: no panic, no invalid layout on any input, and no panic
// merging it with itself (a merge it plans must write a file that passes
// Check), by content and by an "id" column. Seeds: the corpus FlatGeobuf
// files (testdata/fuzz holds the crashers found so far).
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
		side := MergeSide{R: bytes.NewReader(data), Size: int64(len(data))}
		for _, key := range []string{"", "id"} {
			p, cs, err := PlanMerge(t.Context(), side, side, side, MergeOptions{Key: key})
			if err != nil || len(cs) > 0 {
				continue
			}
			var w memWriter
			n, err := p.WriteTo(t.Context(), &w, side, side)
			if err != nil {
				t.Fatalf("a planned merge cannot be written: %v", err)
			}
			if err := p.Check(t.Context(), bytes.NewReader(w), n); err != nil {
				t.Fatalf("the merge of a file with itself fails its check: %v", err)
			}
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
