// Package rasterstats measures what changed inside one raster tile: how
// many pixels differ between two decoded versions of it and, per band,
// the minimum, maximum and mean of the difference (new − old) over those
// pixels. It reads nothing; repo decodes the tiles (formats/tiff) and
// hands them over.
package rasterstats

import (
	"fmt"
	"math"

	"github.com/chunkvc/chunkvc/diff"
	"github.com/chunkvc/chunkvc/formats/tiff"
)

// Compare fills t's changed pixel count and band statistics from the old
// and new decodings of one block (the same grid cell of the same image).
// Only pixels inside the image count, not a tile's edge padding. A pixel
// is changed when any band differs; two NaNs are equal.
func Compare(t *diff.TileStats, old, cur *tiff.Block) error {
	if old.W != cur.W || old.H != cur.H || len(old.Bands) != len(cur.Bands) {
		return fmt.Errorf("tile %s: %dx%d×%d before, %dx%d×%d after", t.Key,
			old.W, old.H, len(old.Bands), cur.W, cur.H, len(cur.Bands))
	}
	n := len(cur.Bands)
	sum := make([]float64, n)
	cnt := make([]int64, n)
	t.Bands = make([]diff.BandStats, n)
	for b := range t.Bands {
		t.Bands[b] = diff.BandStats{Band: b + 1, Min: math.Inf(1), Max: math.Inf(-1)}
	}
	t.ChangedPixels = 0
	vw, vh := min(cur.ValidW, old.ValidW), min(cur.ValidH, old.ValidH)
	for y := range vh {
		for x := range vw {
			i := y*cur.W + x
			changed := false
			for b := range n {
				o, c := old.Bands[b][i], cur.Bands[b][i]
				changed = changed || (o != c && !(math.IsNaN(o) && math.IsNaN(c)))
			}
			if !changed {
				continue
			}
			t.ChangedPixels++
			for b := range n {
				d := cur.Bands[b][i] - old.Bands[b][i]
				if math.IsNaN(d) || math.IsInf(d, 0) {
					continue
				}
				st := &t.Bands[b]
				st.Min, st.Max = math.Min(st.Min, d), math.Max(st.Max, d)
				sum[b] += d
				cnt[b]++
			}
		}
	}
	for b := range t.Bands {
		if cnt[b] == 0 {
			t.Bands[b].Min, t.Bands[b].Max = 0, 0
			continue
		}
		t.Bands[b].Mean = sum[b] / float64(cnt[b])
	}
	return nil
}
