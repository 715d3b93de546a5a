package diffview

import (
	"fmt"
	"slices"
	"strings"

	"github.com/chunkvc/chunkvc/diff"
	"github.com/chunkvc/chunkvc/diff/featurediff"
)

// FeaturesToLonLat reprojects the before and after geometries of
// res.Features in place to EPSG:4326 longitude/latitude (RFC 7946), each
// from the CRS of the file version it was read from, through toLonLat
// (GDAL). Geometries already in lon/lat, or whose file names no CRS, stay
// as they are; with a nil toLonLat (a build without GDAL), or a CRS GDAL
// cannot use, the note says which files kept their own coordinates.
func FeaturesToLonLat(res *diff.Result, toLonLat Reprojector) (note string, err error) {
	if res.Features == nil {
		return "", nil
	}
	oldCRS, newCRS := map[string]string{}, map[string]string{}
	for i := range res.Files {
		f := &res.Files[i]
		if m := f.Old(); m != nil {
			oldCRS[m.Path] = m.SummaryValue("crs")
		}
		if m := f.New(); m != nil {
			newCRS[m.Path] = m.SummaryValue("crs")
		}
	}
	projectors := map[string]func(x, y []float64) error{}
	kept := map[string]string{} // CRS → why its geometries were not reprojected
	var releases []func()
	defer func() {
		for _, r := range releases {
			r()
		}
	}()
	project := func(g *featurediff.Geometry, crs string) error {
		if g == nil || crs == "" || IsLonLat(crs) || kept[crs] != "" {
			return nil
		}
		fn := projectors[crs]
		if fn == nil {
			if toLonLat == nil {
				kept[crs] = "no GDAL in this build"
				return nil
			}
			p, release, err := toLonLat(crs)
			if err != nil {
				kept[crs] = err.Error()
				return nil
			}
			releases = append(releases, release)
			fn = func(x, y []float64) error {
				if err := p(x, y); err != nil {
					return err
				}
				for i := range x {
					x[i], y[i] = round7(x[i]), round7(y[i])
				}
				return nil
			}
			projectors[crs] = fn
		}
		return g.Project(fn)
	}
	for i := range res.Features.Changes {
		ch := &res.Features.Changes[i]
		from := ch.Path
		if ch.FromPath != "" {
			from = ch.FromPath
		}
		oc, ok := oldCRS[from]
		if !ok {
			oc = newCRS[ch.Path]
		}
		if err := project(ch.GeometryOld, oc); err != nil {
			return "", fmt.Errorf("%s: reproject the old geometry of %s from %s: %w", from, ch.Key, oc, err)
		}
		if err := project(ch.GeometryNew, newCRS[ch.Path]); err != nil {
			return "", fmt.Errorf("%s: reproject the new geometry of %s from %s: %w", ch.Path, ch.Key, newCRS[ch.Path], err)
		}
	}
	notes := make([]string, 0, len(kept))
	for crs, why := range kept {
		notes = append(notes, fmt.Sprintf("feature geometries in %s left in that CRS (%s)", crs, why))
	}
	slices.Sort(notes)
	return strings.Join(notes, "; "), nil
}
