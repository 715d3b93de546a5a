package georef

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/chunkvc/chunkvc/geom"
)

// Array describes the data array whose chunks need footprints.
type Array struct {
	Shape      []int
	ChunkShape []int
	// DimNames are v3's dimension_names; when nil, the attributes'
	// _ARRAY_DIMENSIONS (xarray's and GDAL's v2 convention) are read.
	DimNames []string
	Attrs    map[string]json.RawMessage // the array's attributes (.zattrs or zarr.json's)
}

// Source reads the arrays next to the data array (in its group) that a
// footprint needs.
type Source interface {
	// Coord returns the decoded values of the 1-D array called name, in
	// index order; ok is false when there is no such array.
	Coord(name string) (vals []float64, ok bool, err error)
	// Attrs returns the attributes of the array called name; ok is false
	// when there is no such array.
	Attrs(name string) (attrs map[string]json.RawMessage, ok bool, err error)
}

// Span is the extent of one chunk along one axis.
type Span struct{ Min, Max float64 }

// Grid gives every chunk of an array its footprint: chunks that share an
// index along the X dimension share their X extent, and so on for Y.
type Grid struct {
	Dims       int // len(Array.Shape)
	XDim, YDim int // which of the array's dimensions are X and Y
	X, Y       []Span
	// CRS names the coordinates' CRS: "EPSG:32633" when an authority code
	// is given, else the WKT or PROJJSON name, "OGC:CRS84" for CF
	// longitude/latitude without a grid mapping, "" when nothing says.
	CRS string
	// WKT is the CRS's WKT when the store gives one.
	WKT string
	// Convention says where the georeferencing came from: "coordinates"
	// (1-D coordinate arrays, GDAL's and CF's way) or "transform" (an
	// affine transform attribute).
	Convention string
}

// Box is the footprint of the chunk at grid index chunk; ok is false when
// the index is outside the grid.
func (g *Grid) Box(chunk []int) (geom.BBox, bool) {
	if len(chunk) != g.Dims {
		return geom.BBox{}, false
	}
	x, y := chunk[g.XDim], chunk[g.YDim]
	if x < 0 || x >= len(g.X) || y < 0 || y >= len(g.Y) {
		return geom.BBox{}, false
	}
	return geom.BBox{MinX: g.X[x].Min, MinY: g.Y[y].Min, MaxX: g.X[x].Max, MaxY: g.Y[y].Max}, true
}

// Bounds is the footprint of the whole array.
func (g *Grid) Bounds() geom.BBox {
	b := geom.BBox{MinX: g.X[0].Min, MinY: g.Y[0].Min, MaxX: g.X[0].Max, MaxY: g.Y[0].Max}
	for _, s := range g.X {
		b.MinX, b.MaxX = math.Min(b.MinX, s.Min), math.Max(b.MaxX, s.Max)
	}
	for _, s := range g.Y {
		b.MinY, b.MaxY = math.Min(b.MinY, s.Min), math.Max(b.MaxY, s.Max)
	}
	return b
}

// NotLocated is why an array's chunks get no footprint. Locate returns
// no other error: a caller leaves the footprints out and shows Reason.
type NotLocated struct {
	Reason string
	Err    error // what a Source returned, when that was the cause
	// Absent is set when nothing in the store says where the array lies
	// (no spatial dimensions, no coordinate arrays, no transform), as
	// opposed to georeferencing that is there but cannot be used.
	Absent bool
}

func (e *NotLocated) Error() string {
	if e.Err != nil {
		return e.Reason + ": " + e.Err.Error()
	}
	return e.Reason
}

func (e *NotLocated) Unwrap() error { return e.Err }

func notLocated(format string, args ...any) error {
	return &NotLocated{Reason: fmt.Sprintf(format, args...)}
}

// absent is a NotLocated for an array nothing georeferences.
func absent(format string, args ...any) error {
	return &NotLocated{Reason: fmt.Sprintf(format, args...), Absent: true}
}

// Locate finds the georeferencing of array a and the footprint of each of
// its chunks. It tries, in order: 1-D coordinate arrays named by the X and
// Y dimensions (GDAL's Zarr driver, CF/xarray), then an affine transform
// attribute (the GeoZarr draft's spatial:transform, or a CF grid mapping's
// GeoTransform). Every failure is a *NotLocated.
func Locate(a Array, src Source) (*Grid, error) {
	nd := len(a.Shape)
	if nd < 2 || len(a.ChunkShape) != nd {
		return nil, absent("%d-D array with %d-D chunks: no two spatial dimensions", nd, len(a.ChunkShape))
	}
	for i := range nd {
		if a.Shape[i] < 0 || a.ChunkShape[i] <= 0 {
			return nil, notLocated("shape %v with chunks %v", a.Shape, a.ChunkShape)
		}
	}
	dims := a.DimNames
	if dims == nil {
		_ = json.Unmarshal(a.Attrs["_ARRAY_DIMENSIONS"], &dims)
	}
	if len(dims) != nd {
		if t, err := fromTransform(a, src, nil); err == nil {
			return t, nil
		}
		return nil, absent("no dimension names (_ARRAY_DIMENSIONS or dimension_names)")
	}
	xd, yd, err := spatialDims(dims, src)
	if err != nil {
		return nil, err
	}
	if xd < 0 || yd < 0 {
		if t, err := fromTransform(a, src, dims); err == nil {
			return t, nil
		}
		return nil, absent("no x/y dimensions among %s", strings.Join(dims, ","))
	}
	g := &Grid{Dims: nd, XDim: xd, YDim: yd, Convention: "coordinates"}
	xs, okx, err := src.Coord(dims[xd])
	if err != nil {
		return nil, &NotLocated{Reason: "coordinate array " + dims[xd], Err: err}
	}
	ys, oky, err := src.Coord(dims[yd])
	if err != nil {
		return nil, &NotLocated{Reason: "coordinate array " + dims[yd], Err: err}
	}
	if !okx || !oky {
		if t, err := fromTransform(a, src, dims); err == nil {
			return t, nil
		}
		return nil, absent("no coordinate arrays for dims %s,%s", dims[yd], dims[xd])
	}
	if g.X, err = spans(dims[xd], xs, a.Shape[xd], a.ChunkShape[xd]); err != nil {
		return nil, err
	}
	if g.Y, err = spans(dims[yd], ys, a.Shape[yd], a.ChunkShape[yd]); err != nil {
		return nil, err
	}
	if len(g.X) == 0 || len(g.Y) == 0 {
		return nil, notLocated("empty array")
	}
	g.CRS, g.WKT, err = findCRS(a.Attrs, src)
	if err != nil {
		return nil, err
	}
	if g.CRS == "" && isLonLat(dims[xd], dims[yd], src) {
		g.CRS = "OGC:CRS84" // CF: longitude/latitude with no grid mapping
	}
	return g, nil
}

// Names of X and Y dimensions, lower case.
var (
	xNames = map[string]bool{"x": true, "lon": true, "longitude": true, "long": true, "easting": true, "xc": true, "rlon": true}
	yNames = map[string]bool{"y": true, "lat": true, "latitude": true, "northing": true, "yc": true, "rlat": true}
)

// spatialDims picks the X and Y dimensions: by name, else by the CF
// attributes of their coordinate arrays (axis, standard_name, units).
// -1 means none.
func spatialDims(dims []string, src Source) (xd, yd int, err error) {
	xd, yd = -1, -1
	for i, d := range dims {
		l := strings.ToLower(d)
		if xd < 0 && xNames[l] {
			xd = i
		} else if yd < 0 && yNames[l] {
			yd = i
		}
	}
	if xd >= 0 && yd >= 0 {
		return xd, yd, nil
	}
	for i, d := range dims {
		if i == xd || i == yd {
			continue
		}
		attrs, ok, err := src.Attrs(d)
		if err != nil {
			return -1, -1, &NotLocated{Reason: "attributes of " + d, Err: err}
		}
		if !ok {
			continue
		}
		switch axisOf(attrs) {
		case 'X':
			if xd < 0 {
				xd = i
			}
		case 'Y':
			if yd < 0 {
				yd = i
			}
		}
	}
	return xd, yd, nil
}

// axisOf reads CF's hints that a coordinate array is X or Y.
func axisOf(attrs map[string]json.RawMessage) byte {
	s := func(k string) string {
		var v string
		_ = json.Unmarshal(attrs[k], &v)
		return strings.ToLower(v)
	}
	switch {
	case s("axis") == "x", s("standard_name") == "longitude", s("standard_name") == "projection_x_coordinate",
		s("standard_name") == "grid_longitude", strings.HasPrefix(s("units"), "degrees_e"):
		return 'X'
	case s("axis") == "y", s("standard_name") == "latitude", s("standard_name") == "projection_y_coordinate",
		s("standard_name") == "grid_latitude", strings.HasPrefix(s("units"), "degrees_n"):
		return 'Y'
	}
	return 0
}

// isLonLat reports whether the X and Y coordinates are CF longitude and
// latitude, by name or by units.
func isLonLat(x, y string, src Source) bool {
	lx, ly := strings.ToLower(x), strings.ToLower(y)
	if strings.HasPrefix(lx, "lon") && strings.HasPrefix(ly, "lat") {
		return true
	}
	units := func(name string) string {
		attrs, ok, err := src.Attrs(name)
		if err != nil || !ok {
			return ""
		}
		var u string
		_ = json.Unmarshal(attrs["units"], &u)
		return strings.ToLower(u)
	}
	return strings.HasPrefix(units(x), "degrees_e") && strings.HasPrefix(units(y), "degrees_n")
}

// spans gives each chunk along a dimension of n cells (k per chunk) the
// extent of its cells: coordinates are cell centres, a cell reaches
// half-way to its neighbours and, at the ends, half a spacing out, so
// neighbouring chunks' extents abut. Coordinates may descend.
func spans(name string, c []float64, n, k int) ([]Span, error) {
	if len(c) != n {
		return nil, notLocated("coordinate array %s has %d values for %d cells", name, len(c), n)
	}
	for i, v := range c {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, notLocated("coordinate array %s: value %d is %v", name, i, v)
		}
		if i >= 2 && (c[i]-c[i-1])*(c[i-1]-c[i-2]) <= 0 {
			return nil, notLocated("coordinate array %s is not strictly monotonic at %d", name, i)
		}
	}
	if n >= 2 && c[1] == c[0] {
		return nil, notLocated("coordinate array %s is not strictly monotonic at 1", name)
	}
	edge := func(i int) float64 { // the boundary before cell i; i may be n
		switch {
		case n == 1:
			return c[0]
		case i == 0:
			return c[0] - (c[1]-c[0])/2
		case i == n:
			return c[n-1] + (c[n-1]-c[n-2])/2
		}
		return (c[i-1] + c[i]) / 2
	}
	out := make([]Span, (n+k-1)/k)
	for j := range out {
		lo, hi := edge(j*k), edge(min((j+1)*k, n))
		out[j] = Span{math.Min(lo, hi), math.Max(lo, hi)}
	}
	return out, nil
}

// errNoTransform is fromTransform's "nothing here".
var errNoTransform = errors.New("no affine transform")
