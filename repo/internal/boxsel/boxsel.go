package boxsel

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/formats/parquet"
	"github.com/chunkvc/chunkvc/geom"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
)

// Plan checks, before anything is written, that m can be checked out
// by box and returns the box in m's CRS.
func Plan(m *manifest.Manifest, box geom.BBox, crs string) (geom.BBox, error) {
	switch m.Format {
	case formats.TIFF, formats.Parquet, formats.FlatGeobuf:
	default:
		return box, fmt.Errorf("%s: --bbox works on tiff, parquet and flatgeobuf files, not %s; check it out without --bbox", m.Path, m.Format)
	}
	if _, withBox := Wanted(m, box); withBox == 0 {
		return box, fmt.Errorf("%s: --bbox: no chunk of this file has a footprint (no georeferencing?); check it out without --bbox", m.Path)
	}
	return boxIn(m, box, crs)
}

var epsgRE = regexp.MustCompile(`^EPSG:(\d+)$`)

// boxIn returns box (given in crs, "" = the file's CRS) in m's CRS. Without
// GDAL only EPSG:4326 ↔ EPSG:3857 (and identity) are converted.
func boxIn(m *manifest.Manifest, box geom.BBox, crs string) (geom.BBox, error) {
	crs = strings.ToUpper(strings.TrimSpace(crs))
	fileCRS := strings.ToUpper(m.SummaryValue("crs"))
	if crs == "" || crs == fileCRS {
		return box, nil
	}
	if fileCRS == "" {
		return box, fmt.Errorf("%s: --bbox-crs %s given, but the file's CRS is not known; give the box in the file's coordinates without --bbox-crs", m.Path, crs)
	}
	if !epsgRE.MatchString(crs) {
		return box, fmt.Errorf("--bbox-crs %q: want EPSG:<code>", crs)
	}
	f, ok := geom.Converter(crs, fileCRS)
	if !ok {
		return box, fmt.Errorf("%s: cannot convert a --bbox from %s to the file's %s in this build (only EPSG:4326 ↔ EPSG:3857); give the box in %s", m.Path, crs, fileCRS, fileCRS)
	}
	return box.Transform(f), nil
}

// Wanted returns the ids of m's chunks whose footprint meets box, and
// how many of m's chunks have a footprint at all.
// Parquet chunks go by row group: a row group any of whose chunks meets
// the box is wanted whole (a reader needs all its columns).
func Wanted(m *manifest.Manifest, box geom.BBox) (map[hashing.ID]bool, int) {
	want := map[hashing.ID]bool{}
	groups := map[int]bool{}
	withBox := 0
	group := func(key string) int {
		if m.Format == formats.Parquet {
			if k, ok := parquet.ParseKey(key); ok && !k.Gap {
				return k.RowGroup
			}
		}
		return -1
	}
	for _, c := range m.Chunks {
		if c.BBox != nil {
			withBox++
		}
		if c.BBox != nil && c.BBox.Intersects(box) {
			want[c.ID] = true
			if g := group(c.Key); g >= 0 {
				groups[g] = true
			}
		}
	}
	for _, c := range m.Chunks {
		if g := group(c.Key); g >= 0 && groups[g] {
			want[c.ID] = true
		}
	}
	return want, withBox
}
