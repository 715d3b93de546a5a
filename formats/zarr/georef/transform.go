package georef

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// fromTransform reads an affine transform from pixel (column, row) corner
// coordinates to map coordinates: the GeoZarr draft's spatial:transform
// (rasterio's order a, b, c, d, e, f: x = a·col + b·row + c, y = d·col +
// e·row + f) with spatial:dimensions naming Y and X, or a CF grid mapping
// variable's GeoTransform (GDAL's order x0, dx, rx, y0, ry, dy). Without
// dimension names the last two dimensions are Y and X. Rotated transforms
// are refused: a chunk's extent would then depend on both indices.
func fromTransform(a Array, src Source, dims []string) (*Grid, error) {
	var t []float64
	if err := json.Unmarshal(a.Attrs["spatial:transform"], &t); err != nil || len(t) < 6 {
		t = nil
		if gm := gridMapping(a.Attrs); gm != "" {
			if attrs, ok, err := src.Attrs(gm); err == nil && ok {
				if gt := parseFloats(str(attrs["GeoTransform"])); len(gt) == 6 {
					t = []float64{gt[1], gt[2], gt[0], gt[4], gt[5], gt[3]}
				}
			}
		}
	}
	if t == nil {
		return nil, errNoTransform
	}
	for _, v := range t[:6] {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, errNoTransform
		}
	}
	if t[1] != 0 || t[3] != 0 || t[0] == 0 || t[4] == 0 {
		return nil, notLocated("rotated or degenerate affine transform %v", t[:6])
	}
	nd := len(a.Shape)
	yd, xd := nd-2, nd-1
	var sd []string
	if json.Unmarshal(a.Attrs["spatial:dimensions"], &sd) == nil && len(sd) == 2 && dims != nil {
		yd, xd = index(dims, sd[0]), index(dims, sd[1])
	} else if dims != nil {
		if x, y, err := spatialDims(dims, src); err == nil && x >= 0 && y >= 0 {
			xd, yd = x, y
		}
	}
	if xd < 0 || yd < 0 || xd == yd {
		return nil, notLocated("spatial:dimensions %v not among the array's", sd)
	}
	g := &Grid{Dims: nd, XDim: xd, YDim: yd, Convention: "transform"}
	g.X = linearSpans(t[2], t[0], a.Shape[xd], a.ChunkShape[xd])
	g.Y = linearSpans(t[5], t[4], a.Shape[yd], a.ChunkShape[yd])
	if len(g.X) == 0 || len(g.Y) == 0 {
		return nil, notLocated("empty array")
	}
	var err error
	if g.CRS, g.WKT, err = findCRS(a.Attrs, src); err != nil {
		return nil, err
	}
	return g, nil
}

// linearSpans are the chunk extents along an axis whose cell i starts at
// origin + i·step.
func linearSpans(origin, step float64, n, k int) []Span {
	out := make([]Span, (n+k-1)/k)
	for j := range out {
		lo, hi := origin+float64(j*k)*step, origin+float64(min((j+1)*k, n))*step
		out[j] = Span{math.Min(lo, hi), math.Max(lo, hi)}
	}
	return out
}

func parseFloats(s string) []float64 {
	var out []float64
	for _, f := range strings.Fields(s) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil
		}
		out = append(out, v)
	}
	return out
}

func index(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}
