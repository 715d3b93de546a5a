//go:build !gdal

package main

import (
	"context"
	"errors"

	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo"
)

var errNoGDAL = errors.New("this chunkvc was built without GDAL and no chunkvc-gdal is installed beside it or on PATH (make build makes both when GDAL is installed)")

// gdalAvailable fails: normalize needs GDAL.
func gdalAvailable() error { return errNoGDAL }

func normalizeFile(context.Context, *repo.Repo, string, *manifest.Manifest, []string, normalizeOptions) (normalizeResult, error) {
	return normalizeResult{}, errNoGDAL
}
