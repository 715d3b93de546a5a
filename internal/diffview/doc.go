// Package diffview renders a diff.Result for people: a text summary, a
// Markdown table for pull requests, the changed footprints as GeoJSON and
// a PNG map of one file. It reads nothing itself: reprojection and raster
// previews (GDAL) and older file versions (the repository) come in as
// functions, so a build without GDAL, or a test, passes nil.
package diffview
