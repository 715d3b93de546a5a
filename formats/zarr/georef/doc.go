// Package georef gives the chunks of a Zarr array their footprints from
// the store's own georeferencing, in the store's own CRS, as the other
// format adapters do for tiles and row groups.
//
// Contract:
//   - Locate(array, source) returns a Grid whose Box(chunk index) is the
//     chunk's footprint, or a *NotLocated whose Reason says why there is
//     none ("no coordinate arrays for dims y,x"); it never returns another
//     error, so a caller leaves footprints out and goes on. A Source
//     error (a codec package codec cannot decode, say) is the
//     NotLocated's Unwrap.
//   - Conventions, in order: 1-D coordinate arrays named by the X and Y
//     dimensions (GDAL's Zarr driver: _ARRAY_DIMENSIONS ["Y","X"] and
//     _CRS; CF/xarray: lat/lon/x/y arrays, or arrays whose axis,
//     standard_name or units say X or Y, and grid_mapping → crs_wkt or
//     spatial_ref), then an affine transform (the GeoZarr draft's
//     spatial:transform and spatial:dimensions, or a grid mapping's
//     GeoTransform). 2-D (curvilinear) coordinates and rotated transforms
//     give no footprint.
//   - Coordinates are cell centres: a cell reaches half-way to its
//     neighbours and half a spacing past the ends, so neighbouring
//     chunks' boxes abut. Coordinates may ascend or descend (north-up
//     latitude) but must be strictly monotonic and finite.
//   - It reads only what a Source hands it: no files, no codecs.
//
// Glossary:
//   - X/Y dimension: the array dimensions that run east and north; any
//     others (time, band, level) do not change a footprint.
//   - coordinate array: a 1-D array named like a dimension, holding the
//     coordinate of each index along it.
//   - span: the extent along one axis of the cells of one chunk index.
//   - CRS: "EPSG:4326"-style when the store gives an authority code,
//     else the CRS's name; OGC:CRS84 for CF longitude/latitude with no
//     grid mapping; "" when nothing says.
package georef
