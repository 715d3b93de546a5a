package dataset

import (
	"fmt"
	"os"
	"strings"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/formats/zarr"
	"github.com/chunkvc/chunkvc/geom"
	"github.com/chunkvc/chunkvc/manifest"
)

// maxNotes is how many arrays without footprints the summary names.
const maxNotes = 3

// Footprints gives chunks (p's, as Encode returned them) their footprints
// from the georeferencing of the store at dir, and returns the summary
// fields that go with them: "crs" when the located arrays agree on one,
// "footprint_fallback" naming the arrays left without footprints and why,
// "bbox", the union of the footprints, and "time_axis" for each evenly
// spaced CF time coordinate (zarr.TimeAxes). It never fails: a store it
// cannot locate keeps chunks without footprints and says why.
func (p *Plan) Footprints(dir string, chunks []manifest.Chunk) []formats.Field {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return []formats.Field{{Name: "footprint_fallback", Value: clip(err.Error())}}
	}
	defer root.Close()
	fp := zarr.Locate(root.FS(), p.Store)
	boxes := make([]geom.BBox, 0, len(chunks)) // one allocation for every box
	var all *geom.BBox
	for i := range chunks {
		b, ok := fp.Box(chunks[i].Key)
		if !ok {
			continue
		}
		boxes = append(boxes, b)
		chunks[i].BBox = &boxes[len(boxes)-1]
		if all == nil {
			u := b
			all = &u
		} else {
			*all = all.Union(b)
		}
	}
	var f []formats.Field
	if fp.CRS != "" {
		f = append(f, formats.Field{Name: "crs", Value: fp.CRS})
	}
	if n := len(fp.Notes); n > 0 {
		notes := fp.Notes[:min(n, maxNotes)]
		v := strings.Join(notes, "; ")
		if n > maxNotes {
			v += fmt.Sprintf("; and %d more arrays", n-maxNotes)
		}
		f = append(f, formats.Field{Name: "footprint_fallback", Value: clip(v)})
	}
	if all != nil {
		f = append(f, formats.Field{Name: "bbox", Value: formats.SummaryBBox(*all)})
	}
	// CF time coordinates, so that a review can date an append.
	return append(f, zarr.TimeAxes(root.FS(), p.Store)...)
}

// clip bounds a summary value (a manifest header line) to 300 bytes.
func clip(s string) string {
	if len(s) > 300 {
		return s[:297] + "..."
	}
	return s
}
