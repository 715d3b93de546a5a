package rasterstats

import (
	"math"
	"testing"

	"github.com/chunkvc/chunkvc/diff"
	"github.com/chunkvc/chunkvc/formats/tiff"
)

func block(w, h, vw, vh int, bands ...[]float64) *tiff.Block {
	return &tiff.Block{W: w, H: h, ValidW: vw, ValidH: vh, Bands: bands}
}

// TestCompare covers what the golden test cannot easily reach: padding
// outside the image is ignored, NaN = NaN is no change, a NaN difference
// changes the pixel but stays out of the statistics, and a band that did
// not change in a changed pixel counts a difference of 0.
func TestCompare(t *testing.T) {
	nan := math.NaN()
	// 3×2 tile whose last column is padding (valid 2×2).
	old := block(3, 2, 2, 2,
		[]float64{1, 2, 9, 3, nan, 9},
		[]float64{0, 0, 9, 0, 0, 9})
	cur := block(3, 2, 2, 2,
		[]float64{1, 5, 0, 1, nan, 0}, // +3 at (1,0), −2 at (0,1), NaN=NaN at (1,1), padding differs
		[]float64{0, 0, 7, 0, nan, 7}) // only (1,1) changes: a NaN difference
	ts := diff.TileStats{Key: "z0/r0/c0"}
	if err := Compare(&ts, old, cur); err != nil {
		t.Fatal(err)
	}
	if ts.ChangedPixels != 3 {
		t.Errorf("%d changed pixels, want 3", ts.ChangedPixels)
	}
	want := []diff.BandStats{{Band: 1, Min: -2, Max: 3, Mean: 0.5}, {Band: 2, Min: 0, Max: 0, Mean: 0}}
	for b := range want {
		if ts.Bands[b] != want[b] {
			t.Errorf("band %d: %+v, want %+v", b+1, ts.Bands[b], want[b])
		}
	}
	if err := Compare(&ts, old, block(2, 2, 2, 2, nil, nil)); err == nil {
		t.Error("blocks of different shapes compared without an error")
	}
}
