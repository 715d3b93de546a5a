//go:build gdal

package main

import (
	"image"

	"github.com/chunkvc/chunkvc/gdal"
	"github.com/chunkvc/chunkvc/geom"
)

// haveGDAL says whether diff previews and reprojection use GDAL.
const haveGDAL = true

// rasterPreview renders the raster at path to w×h pixels from its overviews
// and returns it with the raster's bbox in its CRS.
func rasterPreview(path string, w, h int) (image.Image, geom.BBox, error) {
	return gdal.RenderPreview(path, w, h)
}

// lonLatTransform returns a function reprojecting points from crs to
// EPSG:4326 longitude/latitude in place, and a release function.
func lonLatTransform(crs string) (func(x, y []float64) error, func(), error) {
	t, err := gdal.NewLonLat(crs)
	if err != nil {
		return nil, nil, err
	}
	return t.Points, t.Close, nil
}
