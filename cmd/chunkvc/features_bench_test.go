package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats/parquet/pqgen"
	"github.com/chunkvc/chunkvc/formats/parquet/rows"
)

// benchPerGroup rows per row group, GDAL's default ROW_GROUP_SIZE for
// (Geo)Parquet; a row of benchRow is about benchRowBytes in the file
// (zstd), so CHUNKVC_BENCH_FEATURES_MB decides the number of row groups.
const benchPerGroup, benchRowBytes = 65536, 55

// benchRow is row i of row group g: random points and values, so the file
// is as large as real data of that many rows rather than compressing away.
func benchRow(rng *rand.Rand, i int) pqgen.Row {
	x, y := rng.Float64()*360-180, rng.Float64()*180-90
	return pqgen.Point(int64(i), fmt.Sprintf("n-%d", rng.IntN(50)), float64(rng.IntN(1e8))/100, x, y)
}

// writeBenchParquet streams groups row groups of benchRow to p, one held
// in memory at a time; edit ≥ 0 sets that row's value to -1.
func writeBenchParquet(b *testing.B, p string, groups, edit int) {
	b.Helper()
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	err = pqgen.WriteGroupsStream(w, groups, func(g int) []pqgen.Row {
		rng := rand.New(rand.NewPCG(31, uint64(g)))
		rs := make([]pqgen.Row, 0, benchPerGroup)
		for i := g * benchPerGroup; i < (g+1)*benchPerGroup; i++ {
			r := benchRow(rng, i)
			if i == edit {
				r.Value = -1
			}
			rs = append(rs, r)
		}
		return rs
	})
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		b.Fatalf("write %s: %v", p, err)
	}
}

// benchLake commits a GeoParquet of about CHUNKVC_BENCH_FEATURES_MB
// megabytes (default 8: quick under plain `go test -bench`; make bench sets
// 1000), then the same with one row of the middle row group edited. It
// returns the runner, the file's size and the edited row group.
func benchLake(b *testing.B) (r *runner, size int64, edited int) {
	b.Helper()
	mb := 8
	if s := os.Getenv("CHUNKVC_BENCH_FEATURES_MB"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("CHUNKVC_BENCH_FEATURES_MB=%q: want a whole number of megabytes ≥ 1", s)
		}
		mb = n
	}
	groups := max(3, mb*1_000_000/(benchPerGroup*benchRowBytes))
	edited = groups / 2
	r = newRunner(b)
	r.cv("init")
	r.cv("track", "*.parquet")
	writeBenchParquet(b, r.path("big.parquet"), groups, -1)
	r.cv("commit", "-m", "v1")
	writeBenchParquet(b, r.path("big.parquet"), groups, edited*benchPerGroup+3)
	r.cv("commit", "-m", "v2")
	st, err := os.Stat(r.path("big.parquet"))
	if err != nil {
		b.Fatal(err)
	}
	return r, st.Size(), edited
}

// rowGroupBytes is the size of row group g's chunks (its pages) in rev's
// big.parquet.
func rowGroupBytes(r *runner, rev string, g int) int64 {
	var ls lsChunks
	r.jsonOf(&ls, "ls-chunks", rev+":big.parquet")
	var n int64
	for _, c := range ls.Chunks {
		if strings.HasPrefix(c.Key, fmt.Sprintf("rg%d/", g)) {
			n += c.Size
		}
	}
	return n
}

// BenchmarkDiffFeaturesOneRowGroup: diff --features of a one-row edit in
// one row group of a GeoParquet (CHUNKVC_BENCH_FEATURES_MB, default 8 MB;
// row groups of 65536 rows), against decoding every row of both versions
// (what a Kart-style diff that does not know the changed pages does).
// Reports bytes read per diff, the edited row group's page bytes in the new
// version and in both, and the file size; scripts/bench-features.sh turns
// them into issue 31's ratios.
//
//	go test ./cmd/chunkvc -run '^$' -bench DiffFeaturesOneRowGroup -benchtime 3x
//	CHUNKVC_BENCH_FEATURES_MB=1000 go test ./cmd/chunkvc -run '^$' -bench DiffFeaturesOneRowGroup -benchtime 1x -timeout 60m
func BenchmarkDiffFeaturesOneRowGroup(b *testing.B) {
	r, size, g := benchLake(b)
	rgNew := rowGroupBytes(r, "HEAD", g)
	rgBoth := rgNew + rowGroupBytes(r, "HEAD~1", g)
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
		b.ReportMetric(float64(rgNew), "rg_bytes")
		b.ReportMetric(float64(rgBoth), "rg_bytes_both")
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
