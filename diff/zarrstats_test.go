package diff

import (
	"math"
	"testing"
)

// TestCompareZarr covers what the zarr-python test does not reach: an
// array that grew (old elements past its old shape are its fill value),
// elements past the new shape left out, NaN = NaN, an infinite difference
// counted as changed but kept out of the statistics, and the totals.
func TestCompareZarr(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	// A 2×3 chunk; the new shape reaches 2×2 of it, the old one 1×2.
	old := ZarrValues{Values: []float64{1, nan, 9, 5, 5, 9}, Valid: []int64{1, 2}, Fill: -1}
	cur := ZarrValues{Values: []float64{4, nan, 0, 2, inf, 0}, Valid: []int64{2, 2}, Fill: -1}
	c := ZarrChunkStats{Key: "a/c/0/0", Change: ChunkChanged}
	if err := CompareZarr(&c, []int64{2, 3}, old, cur); err != nil {
		t.Fatal(err)
	}
	// (0,0) 1→4 +3; (0,1) NaN=NaN; (1,0) fill −1→2 +3; (1,1) −1→+Inf.
	want := ZarrChunkStats{Key: "a/c/0/0", Change: ChunkChanged, Elements: 4, Changed: 3, Numeric: 2, Min: 3, Max: 3, Mean: 3}
	if c.Key != want.Key || c.Elements != want.Elements || c.Changed != want.Changed || c.Numeric != want.Numeric ||
		c.Min != want.Min || c.Max != want.Max || c.Mean != want.Mean {
		t.Errorf("got %+v, want %+v", c, want)
	}
	c2 := ZarrChunkStats{Key: "a/c/0/1"}
	if err := CompareZarr(&c2, []int64{2}, ZarrValues{Values: []float64{1, 2}, Valid: []int64{2}}, ZarrValues{Values: []float64{0, 10}, Valid: []int64{2}}); err != nil {
		t.Fatal(err)
	}
	tot := TotalZarr([]ZarrChunkStats{c, c2, {Key: "a/c/1/1", Error: "stats: boom"}})
	if tot == nil || *tot != (ZarrStats{Chunks: 2, Changed: 5, Numeric: 4, Min: -1, Max: 8, Mean: 13.0 / 4}) {
		t.Errorf("totals %+v", tot)
	}
	if err := CompareZarr(&c, []int64{2, 3}, old, ZarrValues{Values: []float64{1}, Valid: []int64{1, 1}}); err == nil {
		t.Error("a chunk of the wrong length compared without an error")
	}
}
