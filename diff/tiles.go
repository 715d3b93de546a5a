package diff

import "github.com/chunkvc/chunkvc/geom"

// BandStats is the difference (new − old) of one band over a tile's
// changed pixels. A difference that is not a number (one side NaN)
// changes the pixel but does not enter Min, Max or Mean; with no numeric
// difference all three are 0.
type BandStats struct {
	Band int     `json:"band"` // 1-based, as GDAL numbers bands
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// TileStats is one changed tile (or strip) of a raster as diff --stats
// measures it (package diff/rasterstats).
type TileStats struct {
	Key           string      `json:"key"` // the block key, without plane or cut part
	Level         int         `json:"level"`
	Col           int         `json:"col"`
	Row           int         `json:"row"`
	BBox          *geom.BBox  `json:"bbox"`
	ChangedPixels int64       `json:"changed_pixels"`
	Bands         []BandStats `json:"bands"`
	// Error says why the tile was not measured ("stats: …"); the counts
	// are then zero.
	Error string `json:"error,omitempty"`
}
