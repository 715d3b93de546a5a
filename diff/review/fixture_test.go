package review

import (
	"encoding/json"
	"testing"

	"github.com/chunkvc/chunkvc/diff"
	"github.com/chunkvc/chunkvc/formats/tiff"
	"github.com/chunkvc/chunkvc/geom"
)

// fixture is a page with one raster (three changed full-resolution tiles
// and one overview tile, with previews) and one vector file whose four
// feature changes mirror diff --features' JSON (a point added, a line
// removed, a polygon modified, a feature moved with a bbox only).
func fixture(t testing.TB) *Page {
	t.Helper()
	box := func(a, b, c, d float64) *geom.BBox { return &geom.BBox{MinX: a, MinY: b, MaxX: c, MaxY: d} }
	tile := func(level, row, col int, b *geom.BBox) diff.TileStats {
		return diff.TileStats{Key: "z" + itoa(level) + "/r" + itoa(row) + "/c" + itoa(col), Level: level, Row: row, Col: col,
			BBox: b, ChangedPixels: 100, Bands: []diff.BandStats{{Band: 1, Min: 5, Max: 5, Mean: 5}}}
	}
	res := &diff.Result{From: "HEAD~1", To: "HEAD", Files: []diff.FileDiff{
		{Path: "dem.tif", Status: diff.Modified, Format: "tiff", CRS: "EPSG:32633", Extent: box(0, 0, 1000, 1000),
			Tiles: []diff.TileStats{tile(0, 0, 0, box(0, 750, 250, 1000)), tile(0, 1, 2, box(500, 500, 750, 750)),
				tile(0, 3, 3, box(750, 0, 1000, 250)), tile(1, 0, 0, box(0, 500, 500, 1000))}},
		{Path: "roads.parquet", Status: diff.Modified, Format: "parquet", Extent: box(0, 0, 100, 100)},
	}}
	old, cur := gradient(64, 64, false), gradient(64, 64, true)
	before, after, err := Thumbnails(old, cur, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	var feats Features
	if err := json.Unmarshal([]byte(featuresJSON), &feats); err != nil {
		t.Fatal(err)
	}
	return &Page{Result: res, Thumbs: map[string]Thumb{"dem.tif": {Extent: *res.Files[0].Extent, Before: before, After: after}},
		Features: &feats}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// gradient is a one-band block; edited adds a bright square top left.
func gradient(w, h int, edited bool) *tiff.Block {
	bl := &tiff.Block{W: w, H: h, ValidW: w, ValidH: h, Bands: [][]float64{make([]float64, w*h)}}
	for y := range h {
		for x := range w {
			v := float64(x + y)
			if edited && x < w/4 && y < h/4 {
				v = 400
			}
			bl.Bands[0][y*w+x] = v
		}
	}
	return bl
}

const featuresJSON = `{
 "files": [{"path": "roads.parquet", "key": {"column": "id", "source": "detected"}, "added": 1, "removed": 1, "modified": 1, "moved_in": 1, "moved_out": 0, "bytes_read": 1234}],
 "changes": [
  {"change": "added", "key": 11, "path": "roads.parquet", "bbox_old": null, "bbox_new": [10, 10, 10, 10],
   "geometry_old": null, "geometry_new": {"type": "Point", "coordinates": [10, 10]}, "columns": [{"name": "name", "old": null, "new": "Well"}]},
  {"change": "removed", "key": 12, "path": "roads.parquet", "bbox_old": [20, 20, 40, 30], "bbox_new": null,
   "geometry_old": {"type": "LineString", "coordinates": [[20, 20], [40, 30]]}, "geometry_new": null, "columns": []},
  {"change": "modified", "key": 13, "path": "roads.parquet", "bbox_old": [60, 60, 70, 70], "bbox_new": [60, 60, 75, 72],
   "geometry_old": {"type": "Polygon", "coordinates": [[[60, 60], [70, 60], [70, 70], [60, 70], [60, 60]]]},
   "geometry_new": {"type": "Polygon", "coordinates": [[[60, 60], [75, 60], [75, 72], [60, 72], [60, 60]]]},
   "columns": [{"name": "lanes", "old": 2, "new": 3}, {"name": "surface", "old": "gravel", "new": "asphalt"}]},
  {"change": "moved", "key": "k-14", "path": "roads.parquet", "from_path": "old/roads.parquet", "bbox_old": [80, 5, 90, 15], "bbox_new": [80, 5, 90, 15],
   "geometry_old": null, "geometry_new": null, "columns": []}
 ],
 "duplicates": [], "totals": {"added": 1}, "truncated": false, "bytes_read": 1234
}`
