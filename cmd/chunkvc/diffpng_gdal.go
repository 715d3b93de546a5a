//go:build gdal

package main

import (
	"image"

	"github.com/chunkvc/chunkvc/formats/tiff"
	"github.com/chunkvc/chunkvc/gdal"
	"github.com/chunkvc/chunkvc/internal/diffview"
	"github.com/chunkvc/chunkvc/repo"
)

// diffToLonLat reprojects diff footprints to EPSG:4326 with GDAL.
func diffToLonLat() diffview.Reprojector {
	return func(crs string) (func(x, y []float64) error, func(), error) {
		t, err := gdal.NewLonLat(crs)
		if err != nil {
			return nil, nil, err
		}
		return t.Points, t.Close, nil
	}
}

// diffRasters renders rasters under diff --png's outlines with GDAL, from
// their overviews.
func diffRasters(r *repo.Repo) *diffview.Rasters {
	return &diffview.Rasters{
		FileAt: r.FileAt,
		Render: func(name string, w, h int) (image.Image, error) {
			img, _, err := gdal.RenderPreview(name, w, h)
			return img, err
		},
	}
}

// diffWindows reads raster tiles chunkvc cannot decode (JPEG, WebP…) with
// GDAL for diff --stats.
func diffWindows() repo.WindowReader {
	return func(name string, w tiff.Window) ([][]float64, error) {
		return gdal.ReadWindow(name, w.ImageW, w.ImageH, w.X0, w.Y0, w.W, w.H)
	}
}
