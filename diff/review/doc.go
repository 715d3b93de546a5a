// Package review renders a diff as one self-contained HTML page that opens
// offline: per changed file, a map (inline SVG, no basemap, no script from
// elsewhere) of its footprint with the changed tiles and features drawn
// over a preview of the data (raster thumbnails as PNG data URIs, with a
// before/after toggle), and a feature table whose rows move the map to
// the feature they name.
//
// The page's input is Page: the diff result (with raster Tiles when
// measured), thumbnails made by Thumbnails from decoded overviews, and the
// feature changes of diff --features (Features mirrors that JSON object).
// Coordinates are drawn as they come, in each file's CRS: a map is one
// file, so nothing needs reprojecting.
package review
