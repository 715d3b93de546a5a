package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"testing"

	"github.com/chunkvc/chunkvc/formats/parquet/rows"
)

// benchRowGroups × benchPerGroup rows: about 3 MB of GeoParquet (zstd).
const benchRowGroups, benchPerGroup = 20, 50000

// benchLake commits a large GeoParquet, then the same with one row of
// row group 7 edited, and returns the runner and the file's size.
func benchLake(b *testing.B) (*runner, int64) {
	b.Helper()
	r := newRunner(b)
	r.cv("init")
	r.cv("track", "*.parquet")
	writeBigParquet(b, r, "big.parquet", benchRowGroups, benchPerGroup, -1)
	r.cv("commit", "-m", "v1")
	writeBigParquet(b, r, "big.parquet", benchRowGroups, benchPerGroup, 7*benchPerGroup+3)
	r.cv("commit", "-m", "v2")
	return r, int64(len(r.read("big.parquet")))
}

// BenchmarkDiffFeaturesOneRowGroup: diff --features of a one-row edit in
// a ~3 MB GeoParquet of 20 row groups (1M rows), against decoding every row of
// both versions (what a diff that does not know the changed pages does).
// Reports bytes read per diff and the file size.
//
//	go test ./cmd/chunkvc -run '^$' -bench DiffFeaturesOneRowGroup -benchtime 5x
func BenchmarkDiffFeaturesOneRowGroup(b *testing.B) {
	r, size := benchLake(b)
	b.Run("changed-row-groups", func(b *testing.B) {
		var read int64
		for b.Loop() {
			cmd := exec.Command(binary, "diff", "HEAD~1", "HEAD", "--features", "--json")
			cmd.Dir, cmd.Env = r.dir, r.env
			out, err := cmd.Output()
			if err != nil {
				b.Fatal(err)
			}
			var f featuresOut
			if err := json.Unmarshal(out, &f); err != nil {
				b.Fatal(err)
			}
			if f.Features.Totals.Modified != 1 {
				b.Fatalf("totals %+v", f.Features.Totals)
			}
			read = f.Features.BytesRead
		}
		b.ReportMetric(float64(read), "bytes_read/op")
		b.ReportMetric(float64(size), "file_bytes")
	})
	b.Run("full-decode", func(b *testing.B) {
		for b.Loop() {
			f, err := os.Open(r.path("big.parquet"))
			if err != nil {
				b.Fatal(err)
			}
			for range 2 { // both versions
				pf, err := rows.Open(f, size)
				if err != nil {
					b.Fatal(err)
				}
				for g := range pf.RowGroups() {
					if _, err := pf.Read(g); err != nil {
						b.Fatal(err)
					}
				}
			}
			f.Close()
		}
		b.ReportMetric(float64(2*size), "bytes_read/op")
		b.ReportMetric(float64(size), "file_bytes")
	})
}
