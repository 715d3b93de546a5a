//go:build gdal

package gdal

import (
	"errors"
	"fmt"
	"image"
	"image/color"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/airbusgeo/godal"

	"github.com/chunkvc/chunkvc/geom"
)

var renderRegister sync.Once

// RenderPreview reads the raster at path down to w×h pixels (GDAL picks
// the overview level that fits, so a 40 GB COG costs a few tiles) and
// stretches it to 8 bits: bands 1–3 as RGB when there are three or more,
// else band 1 as grey, each from its 2nd to 98th percentile; nodata is
// transparent. It also returns the raster's bbox (minx, miny, maxx, maxy)
// in its own CRS.
func RenderPreview(path string, w, h int) (*image.RGBA, geom.BBox, error) {
	var box geom.BBox
	if w <= 0 || h <= 0 || w > 8192 || h > 8192 {
		return nil, box, fmt.Errorf("preview size %dx%d out of range", w, h)
	}
	renderRegister.Do(godal.RegisterAll)
	// Warnings (an in-place edited COG's "layout invalidated") are not
	// failures for a preview.
	quiet := godal.ErrLogger(func(ec godal.ErrorCategory, code int, msg string) error {
		if ec >= godal.CE_Failure {
			return errors.New(strings.TrimSpace(msg))
		}
		return nil
	})
	ds, err := godal.Open(path, godal.RasterOnly(), quiet)
	if err != nil {
		return nil, box, fmt.Errorf("open %s: %w", path, err)
	}
	defer func() { _ = ds.Close() }() // opened read-only: nothing to flush
	bounds, err := ds.Bounds(quiet)
	if err != nil {
		return nil, box, fmt.Errorf("%s: bounds: %w", path, err)
	}
	box = geom.FromArray(bounds)
	st := ds.Structure()
	bands := ds.Bands()
	if len(bands) == 0 || st.SizeX <= 0 || st.SizeY <= 0 {
		return nil, box, fmt.Errorf("%s: no raster bands", path)
	}
	use := bands[:1]
	if len(bands) >= 3 {
		use = bands[:3]
	}
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	valid := make([]bool, w*h)
	for i := range valid {
		valid[i] = true
	}
	planes := make([][]uint8, len(use))
	buf := make([]float64, w*h)
	for bi, b := range use {
		if err := b.Read(0, 0, buf, w, h, godal.Window(st.SizeX, st.SizeY), quiet); err != nil {
			return nil, box, fmt.Errorf("%s: read band %d: %w", path, bi+1, err)
		}
		nodata, hasNodata := b.NoData()
		var vals []float64
		for i, v := range buf {
			if math.IsNaN(v) || (hasNodata && v == nodata) {
				valid[i] = false
				continue
			}
			vals = append(vals, v)
		}
		lo, hi := 0.0, 1.0
		if len(vals) > 0 {
			slices.Sort(vals)
			lo, hi = vals[len(vals)*2/100], vals[(len(vals)-1)*98/100]
			if hi <= lo {
				hi = lo + 1
			}
		}
		p := make([]uint8, w*h)
		for i, v := range buf {
			s := (v - lo) / (hi - lo) * 255
			p[i] = uint8(math.Max(0, math.Min(255, s)))
		}
		planes[bi] = p
	}
	for i := 0; i < w*h; i++ {
		if !valid[i] {
			continue
		}
		c := color.RGBA{planes[0][i], planes[0][i], planes[0][i], 255}
		if len(planes) == 3 {
			c.G, c.B = planes[1][i], planes[2][i]
		}
		img.SetRGBA(i%w, i/w, c)
	}
	return img, box, nil
}

// LonLat reprojects coordinates from a CRS to EPSG:4326 in longitude,
// latitude order (RFC 7946).
type LonLat struct {
	src, dst *godal.SpatialRef
	trn      *godal.Transform
}

// NewLonLat prepares a transformation from crs ("EPSG:32633", "OGC:CRS84",
// WKT or PROJJSON: anything OSRSetFromUserInput takes).
func NewLonLat(crs string) (*LonLat, error) {
	renderRegister.Do(godal.RegisterAll)
	src, err := godal.NewSpatialRef(crs)
	if err != nil {
		return nil, fmt.Errorf("crs %q: %w", crs, err)
	}
	dst, err := godal.NewSpatialRefFromEPSG(4326)
	if err != nil {
		src.Close()
		return nil, fmt.Errorf("EPSG:4326: %w", err)
	}
	trn, err := godal.NewTransform(src, dst)
	if err != nil {
		src.Close()
		dst.Close()
		return nil, fmt.Errorf("transform %s to EPSG:4326: %w", crs, err)
	}
	return &LonLat{src: src, dst: dst, trn: trn}, nil
}

// Points reprojects x, y in place; x becomes longitude and y latitude.
func (t *LonLat) Points(x, y []float64) error {
	if len(x) == 0 {
		return nil
	}
	if len(x) != len(y) {
		return fmt.Errorf("%d x and %d y coordinates", len(x), len(y))
	}
	return t.trn.TransformEx(x, y, nil, nil)
}

// Close releases the transformation.
func (t *LonLat) Close() {
	t.trn.Close()
	t.src.Close()
	t.dst.Close()
}
