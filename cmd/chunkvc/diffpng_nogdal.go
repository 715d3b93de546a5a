//go:build !gdal

package main

import (
	"github.com/chunkvc/chunkvc/internal/diffview"
	"github.com/chunkvc/chunkvc/repo"
)

// diffToLonLat is nil without GDAL: GeoJSON keeps footprints in their
// own CRS (longitude/latitude ones need no reprojection).
func diffToLonLat() diffview.Reprojector { return nil }

// diffRasters is nil without GDAL: diff --png draws outlines only.
func diffRasters(*repo.Repo) *diffview.Rasters { return nil }

// diffWindows is nil without GDAL: diff --stats warns about codecs it
// cannot decode in Go.
func diffWindows() repo.WindowReader { return nil }
