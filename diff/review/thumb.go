package review

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"

	"github.com/chunkvc/chunkvc/formats/tiff"
)

// MaxThumb is the longest side of a thumbnail in pixels.
const MaxThumb = 512

// Thumbnails renders two decodings of one raster (either may be nil) as
// PNGs with one shared stretch, so that a pixel that did not change looks
// the same in both and the toggle shows only the change: one band as
// grey, three or more as RGB of the first three. Values equal to nodata
// (when hasNoData) and NaNs are transparent.
func Thumbnails(old, cur *tiff.Block, nodata float64, hasNoData bool) (before, after []byte, err error) {
	ref := cur
	if ref == nil {
		ref = old
	}
	if ref == nil {
		return nil, nil, nil
	}
	bands := 1
	if len(ref.Bands) >= 3 {
		bands = 3
	}
	valid := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && (!hasNoData || v != nodata) }
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, bl := range []*tiff.Block{old, cur} {
		if bl == nil {
			continue
		}
		for b := range min(bands, len(bl.Bands)) {
			for _, v := range bl.Bands[b] {
				if valid(v) {
					lo, hi = math.Min(lo, v), math.Max(hi, v)
				}
			}
		}
	}
	if hi <= lo {
		hi = lo + 1
	}
	render := func(bl *tiff.Block) ([]byte, error) {
		if bl == nil {
			return nil, nil
		}
		scale := math.Min(1, float64(MaxThumb)/float64(max(bl.ValidW, bl.ValidH)))
		w, h := max(1, int(float64(bl.ValidW)*scale)), max(1, int(float64(bl.ValidH)*scale))
		img := image.NewNRGBA(image.Rect(0, 0, w, h))
		for y := range h {
			for x := range w {
				i := int(float64(y)/scale)*bl.W + int(float64(x)/scale)
				var c [3]uint8
				ok := true
				for k := range 3 {
					v := bl.Bands[min(k, bands-1, len(bl.Bands)-1)][i]
					ok = ok && valid(v)
					c[k] = uint8(math.Round(255 * (v - lo) / (hi - lo)))
				}
				if ok {
					img.SetNRGBA(x, y, color.NRGBA{c[0], c[1], c[2], 255})
				}
			}
		}
		var buf bytes.Buffer
		err := png.Encode(&buf, img)
		return buf.Bytes(), err
	}
	if before, err = render(old); err != nil {
		return nil, nil, err
	}
	after, err = render(cur)
	return before, after, err
}
