package tiff

import (
	"fmt"
	"math"

	"github.com/chunkvc/chunkvc/geom"
)

// GeoKeys the adapter reads from the GeoKeyDirectory.
const (
	keyRasterType      = 1025
	keyGeographicType  = 2048
	keyProjectedType   = 3072
	rasterPixelIsPoint = 2
	userDefined        = 32767
)

// geo is the georeferencing of one image: a GDAL-style affine geotransform
// (x = gt0 + px·gt1 + py·gt2, y = gt3 + px·gt4 + py·gt5) and the CRS.
type geo struct {
	gt  [6]float64
	ok  bool   // gt is usable
	crs string // "EPSG:n", "user-defined" or ""
}

// readGeo extracts the georeferencing from d's GeoTIFF tags, the way GDAL
// does (FORMATS.md §1.2): ModelTransformation wins over tiepoint + scale,
// and PixelIsPoint shifts the origin by half a pixel.
func (rd *reader) readGeo(d *ifd) geo {
	var g geo
	keys := rd.geoKeys(d)
	if v, ok := keys[keyProjectedType]; ok && v != 0 && v != userDefined {
		g.crs = fmt.Sprintf("EPSG:%d", v)
	} else if v, ok := keys[keyGeographicType]; ok && v != 0 && v != userDefined {
		g.crs = fmt.Sprintf("EPSG:%d", v)
	} else if len(keys) > 0 {
		g.crs = "user-defined"
	}
	if m := rd.doubles(d, tagModelTransform, 16); len(m) == 16 {
		g.gt = [6]float64{m[3], m[0], m[1], m[7], m[4], m[5]}
		g.ok = true
	} else if tp, sc := rd.doubles(d, tagModelTiepoint, 6), rd.doubles(d, tagModelPixelScale, 3); len(tp) == 6 && len(sc) >= 2 {
		sx, sy := sc[0], sc[1]
		g.gt = [6]float64{tp[3] - tp[0]*sx, sx, 0, tp[4] + tp[1]*sy, 0, -sy}
		g.ok = true
	}
	if g.ok && keys[keyRasterType] == rasterPixelIsPoint {
		g.gt[0] -= 0.5*g.gt[1] + 0.5*g.gt[2]
		g.gt[3] -= 0.5*g.gt[4] + 0.5*g.gt[5]
	}
	for _, v := range g.gt {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			g.ok = false
		}
	}
	if g.ok && g.gt[1]*g.gt[5]-g.gt[2]*g.gt[4] == 0 {
		g.ok = false // degenerate: every pixel maps to a line or a point
	}
	return g
}

// geoKeys returns the SHORT-valued keys of the GeoKeyDirectory (location 0).
func (rd *reader) geoKeys(d *ifd) map[uint64]uint64 {
	e := d.find(tagGeoKeyDirectory)
	if e == nil || e.typ != typeShort || e.count < 4 || e.count > maxEntries*4 {
		return nil
	}
	v, err := rd.uints(d, tagGeoKeyDirectory)
	if err != nil || len(v) < 4 {
		return nil
	}
	n := min(v[3], uint64(len(v)-4)/4)
	keys := make(map[uint64]uint64, n)
	for i := uint64(0); i < n; i++ {
		k := v[4+4*i:]
		if k[1] == 0 && k[2] == 1 { // value stored in the entry itself
			keys[k[0]] = k[3]
		}
	}
	return keys
}

// bbox is the footprint of the pixel rectangle [x0,x1)×[y0,y1) of an image
// whose pixels are fx×fy pixels of the georeferenced image (overviews are
// scaled by the size ratio, per axis). All four corners are transformed,
// so rotated grids get their true extent. nil when not georeferenced.
func (g geo) bbox(x0, y0, x1, y1, fx, fy float64) *geom.BBox {
	if !g.ok {
		return nil
	}
	b := geom.Empty
	for _, c := range [4][2]float64{{x0, y0}, {x1, y0}, {x0, y1}, {x1, y1}} {
		px, py := c[0]*fx, c[1]*fy
		b = b.Extend(g.gt[0]+px*g.gt[1]+py*g.gt[2], g.gt[3]+px*g.gt[4]+py*g.gt[5])
	}
	if !b.Valid() {
		return nil
	}
	return &b
}
