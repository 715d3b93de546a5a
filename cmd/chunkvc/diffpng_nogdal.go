//go:build !gdal

package main

import (
	"errors"
	"image"

	"github.com/chunkvc/chunkvc/geom"
)

// haveGDAL says whether diff previews and reprojection use GDAL.
const haveGDAL = false

var errDiffNoGDAL = errors.New("this chunkvc was built without GDAL (build with -tags gdal)")

// rasterPreview needs GDAL; without it diff pictures are outlines only.
func rasterPreview(path string, w, h int) (image.Image, geom.BBox, error) {
	return nil, geom.BBox{}, errDiffNoGDAL
}

// lonLatTransform needs GDAL for any CRS but longitude/latitude ones, which
// the caller handles itself.
func lonLatTransform(crs string) (func(x, y []float64) error, func(), error) {
	return nil, nil, errDiffNoGDAL
}
