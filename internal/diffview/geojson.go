package diffview

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/chunkvc/chunkvc/diff"
	"github.com/chunkvc/chunkvc/formats/tiff"
	"github.com/chunkvc/chunkvc/geom"
)

// mapChanges are the changes a map shows: for TIFF only the finest level
// that changed (overview tiles would cover the whole image), otherwise
// every changed chunk with a footprint.
func mapChanges(f *diff.FileDiff) []diff.ChunkChange {
	finest := -1
	if f.Tiff != nil {
		for _, l := range f.Tiff.Levels {
			if l.Changed > 0 && !l.Mask && (finest < 0 || l.Level < finest) {
				finest = l.Level
			}
		}
	}
	var out []diff.ChunkChange
	for _, c := range f.Changes {
		if c.BBox == nil {
			continue
		}
		if finest >= 0 && !atLevel(c.Key, finest) {
			continue
		}
		out = append(out, c)
	}
	return out
}

// atLevel reports whether key is a block of level lv of a TIFF's first
// pyramid (not its mask).
func atLevel(key string, lv int) bool {
	k, ok := tiff.ParseKey(key)
	return ok && !k.Gap && k.IFD < 0 && !k.Mask && k.Level == lv
}

// IsLonLat reports whether crs is longitude/latitude on WGS 84 as GeoTIFF,
// GeoParquet and FlatGeobuf spell footprints (x = longitude).
func IsLonLat(crs string) bool {
	switch strings.ToUpper(crs) {
	case "EPSG:4326", "OGC:CRS84", "CRS84":
		return true
	}
	return false
}

type geoFeature struct {
	Type       string         `json:"type"`
	Properties map[string]any `json:"properties"`
	Geometry   geoPolygon     `json:"geometry"`
}

type geoPolygon struct {
	Type        string         `json:"type"`
	Coordinates [][][2]float64 `json:"coordinates"`
}

// ring is the closed, counter-clockwise outline of b with n points per edge.
func ring(b geom.BBox, n int) (xs, ys []float64) {
	corners := [][2]float64{{b.MinX, b.MinY}, {b.MaxX, b.MinY}, {b.MaxX, b.MaxY}, {b.MinX, b.MaxY}}
	for i := 0; i < 4; i++ {
		a, c := corners[i], corners[(i+1)%4]
		for k := 0; k < n; k++ {
			t := float64(k) / float64(n)
			xs = append(xs, a[0]+(c[0]-a[0])*t)
			ys = append(ys, a[1]+(c[1]-a[1])*t)
		}
	}
	return append(xs, xs[0]), append(ys, ys[0])
}

func round7(v float64) float64 { return math.Round(v*1e7) / 1e7 }

// Reprojector returns a function reprojecting points in place from crs to
// EPSG:4326 longitude/latitude, and a function releasing it.
type Reprojector func(crs string) (project func(x, y []float64) error, release func(), err error)

// GeoJSON writes the changed chunks' footprints as an RFC 7946
// FeatureCollection in EPSG:4326. Footprints in another CRS go through
// toLonLat (GDAL); with a nil toLonLat (a build without GDAL) they are
// written in their own CRS with a (pre-RFC 7946) "crs" member instead,
// and the returned note says so.
func GeoJSON(w io.Writer, res *diff.Result, toLonLat Reprojector) (note string, err error) {
	return geoJSON(w, res, toLonLat, func(f *diff.FileDiff, c diff.ChunkChange) map[string]any {
		return map[string]any{"path": f.Path, "key": c.Key, "change": c.Change, "bytes": c.Bytes}
	})
}

// geoJSON is GeoJSON with each feature's properties from props.
func geoJSON(w io.Writer, res *diff.Result, toLonLat Reprojector, props func(*diff.FileDiff, diff.ChunkChange) map[string]any) (note string, err error) {
	type fc struct {
		Type     string         `json:"type"`
		CRS      map[string]any `json:"crs,omitempty"`
		Features []geoFeature   `json:"features"`
	}
	out := fc{Type: "FeatureCollection", Features: []geoFeature{}}
	var notes []string
	nativeCRS := ""
	for i := range res.Files {
		f := &res.Files[i]
		changes := mapChanges(f)
		if len(changes) == 0 {
			continue
		}
		var project func(x, y []float64) error
		densify := 1
		switch {
		case IsLonLat(f.CRS):
		case f.CRS == "" || f.CRS == "undefined" || f.CRS == "user-defined":
			notes = append(notes, fmt.Sprintf("%s: CRS %q unknown, footprints left out", f.Path, f.CRS))
			continue
		default:
			if toLonLat != nil {
				fn, release, err := toLonLat(f.CRS)
				if err == nil {
					defer release()
					project, densify = fn, 8
					break
				}
				notes = append(notes, fmt.Sprintf("%s: cannot reproject %s: %v; footprints left out", f.Path, f.CRS, err))
				continue
			}
			if nativeCRS != "" && nativeCRS != f.CRS {
				notes = append(notes, fmt.Sprintf("%s: footprints in %s left out (without GDAL one collection holds one CRS, here %s)", f.Path, f.CRS, nativeCRS))
				continue
			}
			nativeCRS = f.CRS
		}
		for _, c := range changes {
			xs, ys := ring(*c.BBox, densify)
			if project != nil {
				if err := project(xs, ys); err != nil {
					return "", fmt.Errorf("%s: reproject %s from %s: %w", f.Path, c.Key, f.CRS, err)
				}
			}
			pts := make([][2]float64, len(xs))
			for k := range xs {
				pts[k] = [2]float64{round7(xs[k]), round7(ys[k])}
			}
			out.Features = append(out.Features, geoFeature{Type: "Feature",
				Properties: props(f, c),
				Geometry:   geoPolygon{Type: "Polygon", Coordinates: [][][2]float64{pts}}})
		}
	}
	if nativeCRS != "" {
		name := nativeCRS
		if org, code, ok := strings.Cut(nativeCRS, ":"); ok {
			name = "urn:ogc:def:crs:" + org + "::" + code
		}
		out.CRS = map[string]any{"type": "name", "properties": map[string]string{"name": name}}
		notes = append(notes, fmt.Sprintf("built without GDAL: footprints are in %s with a non-standard \"crs\" member, not EPSG:4326 as RFC 7946 asks (GDAL and QGIS read it; build with -tags gdal to reproject)", nativeCRS))
	}
	enc := json.NewEncoder(w)
	if err := enc.Encode(out); err != nil {
		return "", err
	}
	return strings.Join(notes, "; "), nil
}
