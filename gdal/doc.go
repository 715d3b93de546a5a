//go:build gdal

// Package gdal is chunkvc's only use of GDAL (cgo, through godal): it
// re-encodes rasters to a pinned COG profile without churning unchanged
// tiles, and compares two rasters tile by tile, by pixels and by bytes.
// It builds only with the gdal tag; everything else builds with
// CGO_ENABLED=0.
package gdal
