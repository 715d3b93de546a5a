//go:build !gdal

package main

import (
	"os"
	"slices"
	"syscall"
)

// delegateToGDAL hands a command that needs GDAL (normalize; diff --png,
// --format geojson or --stats, which render, reproject and decode with it)
// to chunkvc-gdal,
// the same program built with the gdal tag, when it is installed beside
// this one or on PATH. The everyday binary stays free of GDAL's shared
// libraries, whose loading costs ~50 ms on every command.
func delegateToGDAL(args []string) {
	if len(args) < 2 {
		return
	}
	png := func(a string) bool { return a == "--png" || len(a) > 6 && a[:6] == "--png=" }
	// geojson, of chunk footprints or of --features geometries, is
	// reprojected to lon/lat with GDAL.
	needs := args[1] == "normalize" ||
		args[1] == "diff" && slices.ContainsFunc(args[2:], func(a string) bool {
			return png(a) || a == "geojson" || a == "--format=geojson" ||
				a == "--stats" // tiles chunkvc cannot decode (JPEG, WebP…) are read with GDAL
		})
	if !needs {
		return
	}
	bin := companion("chunkvc-gdal")
	if bin == "" {
		return // run here: normalize explains, diff draws outlines only
	}
	_ = syscall.Exec(bin, append([]string{bin}, args[1:]...), os.Environ())
}
