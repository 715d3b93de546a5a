//go:build gdal

package gdal

import (
	"errors"
	"fmt"
	"strings"

	"github.com/airbusgeo/godal"
)

// ReadWindow reads the w×h pixel window at x0, y0 of every band of the
// raster at path, from the full-resolution image when its size is
// imgW×imgH, else from the overview of that size: what chunkvc's own
// decoder cannot read (JPEG, WebP, LERC tiles), GDAL decodes. Samples are
// widened to float64, Bands[b][y*w+x].
func ReadWindow(path string, imgW, imgH, x0, y0, w, h int) ([][]float64, error) {
	renderRegister.Do(godal.RegisterAll)
	quiet := godal.ErrLogger(func(ec godal.ErrorCategory, code int, msg string) error {
		if ec >= godal.CE_Failure {
			return errors.New(strings.TrimSpace(msg))
		}
		return nil
	})
	ds, err := godal.Open(path, godal.RasterOnly(), quiet)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer func() { _ = ds.Close() }() // read-only
	var out [][]float64
	for bi, b := range ds.Bands() {
		src, found := b, false
		for _, c := range append([]godal.Band{b}, b.Overviews()...) {
			if st := c.Structure(); st.SizeX == imgW && st.SizeY == imgH {
				src, found = c, true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("%s band %d: no %dx%d image or overview", path, bi+1, imgW, imgH)
		}
		buf := make([]float64, w*h)
		if err := src.Read(x0, y0, buf, w, h, quiet); err != nil {
			return nil, fmt.Errorf("%s band %d: read %dx%d at %d,%d: %w", path, bi+1, w, h, x0, y0, err)
		}
		out = append(out, buf)
	}
	return out, nil
}
