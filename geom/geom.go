// Package geom is chunkvc's one bounding-box type and the little map math
// the pipelines need without GDAL.
//
// Glossary:
//   - BBox: an axis-aligned footprint in some CRS (the file's own unless
//     a caller says otherwise): MinX, MinY, MaxX, MaxY.
//   - valid: all four coordinates finite and min ≤ max on both axes.
//   - footprint: the BBox of a chunk (a tile, a row group, a feature
//     block) or of a whole file.
//
// A BBox is a value; an unknown footprint is a nil *BBox. In JSON a BBox
// is the array [minx,miny,maxx,maxy], as chunkvc's outputs always wrote it.
package geom

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// BBox is an axis-aligned box.
type BBox struct{ MinX, MinY, MaxX, MaxY float64 }

// Empty is the identity of Union: it contains nothing and any box
// extended by it stays the same.
var Empty = BBox{math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)}

// Parse reads "minx,miny,maxx,maxy" (spaces around numbers allowed) and
// refuses anything that is not a valid box.
func Parse(s string) (BBox, error) {
	parts := strings.Split(s, ",")
	if len(parts) != 4 {
		return BBox{}, fmt.Errorf("bbox %q: want minx,miny,maxx,maxy", s)
	}
	var v [4]float64
	for i, p := range parts {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return BBox{}, fmt.Errorf("bbox %q: %q is not a number", s, p)
		}
		v[i] = f
	}
	b := FromArray(v)
	if b.MinX > b.MaxX || b.MinY > b.MaxY {
		return BBox{}, fmt.Errorf("bbox %q: min is greater than max", s)
	}
	return b, nil
}

// FromArray is the box [minx, miny, maxx, maxy].
func FromArray(a [4]float64) BBox { return BBox{a[0], a[1], a[2], a[3]} }

// Array is b as [minx, miny, maxx, maxy].
func (b BBox) Array() [4]float64 { return [4]float64{b.MinX, b.MinY, b.MaxX, b.MaxY} }

// Valid reports whether every coordinate is finite and min ≤ max.
func (b BBox) Valid() bool {
	for _, v := range b.Array() {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return b.MinX <= b.MaxX && b.MinY <= b.MaxY
}

// String spells b for people: each coordinate rounded to 6 decimals.
func (b BBox) String() string {
	var sb strings.Builder
	for i, v := range b.Array() {
		if i > 0 {
			sb.WriteByte(',')
		}
		if math.Abs(v) < 1e15 { // beyond, there are no decimals to round
			v = math.Round(v*1e6) / 1e6
		}
		sb.WriteString(strconv.FormatFloat(v, 'f', -1, 64))
	}
	return sb.String()
}

// Union is the smallest box holding b and o.
func (b BBox) Union(o BBox) BBox {
	return BBox{min(b.MinX, o.MinX), min(b.MinY, o.MinY), max(b.MaxX, o.MaxX), max(b.MaxY, o.MaxY)}
}

// Extend is b grown to hold the point (x, y).
func (b BBox) Extend(x, y float64) BBox {
	return BBox{min(b.MinX, x), min(b.MinY, y), max(b.MaxX, x), max(b.MaxY, y)}
}

// UnionPtr is the union of two optional boxes: nil when both are nil, and
// never one of its arguments (callers may change what it returns).
func UnionPtr(a, b *BBox) *BBox {
	switch {
	case a == nil && b == nil:
		return nil
	case a == nil:
		c := *b
		return &c
	case b == nil:
		c := *a
		return &c
	}
	c := a.Union(*b)
	return &c
}

// Intersects reports whether b and o share interior: boxes that only
// touch along an edge do not.
func (b BBox) Intersects(o BBox) bool {
	return b.MinX < o.MaxX && b.MaxX > o.MinX && b.MinY < o.MaxY && b.MaxY > o.MinY
}

// Area is (MaxX−MinX)×(MaxY−MinY), 0 for an invalid box.
func (b BBox) Area() float64 {
	if !b.Valid() {
		return 0
	}
	return (b.MaxX - b.MinX) * (b.MaxY - b.MinY)
}

// Fraction is the share of extent's area that b covers, 0 when either is
// unknown or extent has no area.
func Fraction(b, extent *BBox) float64 {
	if b == nil || extent == nil {
		return 0
	}
	ea := extent.Area()
	if ea <= 0 {
		return 0
	}
	return b.Area() / ea
}

// MarshalJSON writes [minx,miny,maxx,maxy].
func (b BBox) MarshalJSON() ([]byte, error) { return json.Marshal(b.Array()) }

// UnmarshalJSON reads [minx,miny,maxx,maxy].
func (b *BBox) UnmarshalJSON(data []byte) error {
	var a [4]float64
	if err := json.Unmarshal(data, &a); err != nil {
		return fmt.Errorf("bbox: %w", err)
	}
	*b = FromArray(a)
	return nil
}
