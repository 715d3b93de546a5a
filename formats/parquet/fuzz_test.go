package parquet

import (
	"bytes"
	"context"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
	"github.com/chunkvc/chunkvc/formats/parquet/pqgen"
)

// FuzzLayout: no panic, no invalid layout, no runaway allocation on any
// input. Seeds: the corpus Parquet files, the 21-byte OOM file, a small
// generated GeoParquet and the writer quirks of issue 33 (fastparquet's
// empty lists, Brotli and LZ4_RAW geometry, native GEOMETRY and GEOGRAPHY
// columns).
func FuzzLayout(f *testing.F) {
	formattest.Seeds(f, ".parquet", ".parq")
	f.Add(oom21())
	f.Add(small())
	var nc bytes.Buffer
	if err := pqgen.Write(&nc, pqgen.Config{Rows: 300, RowGroups: 3, Seed: 7, NoCovering: true}); err != nil {
		f.Fatal(err)
	}
	f.Add(nc.Bytes())
	for _, codec := range []string{"brotli", "lz4raw"} {
		f.Add(genFile(f, pqgen.Config{Rows: 300, RowGroups: 3, Seed: 7, NoCovering: true, Codec: codec}))
	}
	foot, _ := emptyListsTypeZero(footerOf(small()))
	f.Add(withFooter(small(), foot))
	for _, geography := range []bool{false, true} {
		data, _ := nativeFile(f, geography)
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		formattest.Fuzz(t, Adapter{}, data)
	})
}

// BenchmarkLayout enumerates issue 4's 200k-point, 20-row-group file
// (~11 MB, ~360 chunks); MB/s is file bytes per second.
func BenchmarkLayout(b *testing.B) {
	data := generate(b, points)
	r := bytes.NewReader(data)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (Adapter{}).Layout(context.Background(), r, int64(len(data))); err != nil {
			b.Fatal(err)
		}
	}
}
