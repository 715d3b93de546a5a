package geom

import "math"

// EarthRadius is the sphere radius of EPSG:3857 (Web Mercator), metres.
const EarthRadius = 6378137.0

// maxMercatorLat is where Web Mercator stops: the latitude at which the
// projected square closes.
const maxMercatorLat = 85.05112878

// LonLatToWebMercator projects EPSG:4326 degrees to EPSG:3857 metres,
// clamping latitude to the projection's range.
func LonLatToWebMercator(lon, lat float64) (x, y float64) {
	lat = max(min(lat, maxMercatorLat), -maxMercatorLat)
	return EarthRadius * lon * math.Pi / 180, EarthRadius * math.Log(math.Tan(math.Pi/4+lat*math.Pi/360))
}

// WebMercatorToLonLat is the inverse of LonLatToWebMercator.
func WebMercatorToLonLat(x, y float64) (lon, lat float64) {
	return x / EarthRadius * 180 / math.Pi, (2*math.Atan(math.Exp(y/EarthRadius)) - math.Pi/2) * 180 / math.Pi
}

// Transform is the envelope of b's image under f, sampled at 17 points
// along each edge: enough for the smooth, monotone projections it is used
// with (a curved edge's bulge between samples is below a pixel at tile
// scale).
func (b BBox) Transform(f func(x, y float64) (float64, float64)) BBox {
	out := Empty
	const steps = 16
	for i := 0; i <= steps; i++ {
		t := float64(i) / steps
		x := b.MinX + t*(b.MaxX-b.MinX)
		y := b.MinY + t*(b.MaxY-b.MinY)
		for _, p := range [4][2]float64{{x, b.MinY}, {x, b.MaxY}, {b.MinX, y}, {b.MaxX, y}} {
			out = out.Extend(f(p[0], p[1]))
		}
	}
	return out
}

// Converter returns the function taking coordinates in CRS from to CRS
// to, both spelled "EPSG:<code>" in upper case, for the pairs converted
// without GDAL: EPSG:4326 to EPSG:3857 and back. ok is false for any
// other pair.
func Converter(from, to string) (f func(x, y float64) (float64, float64), ok bool) {
	switch {
	case from == "EPSG:4326" && to == "EPSG:3857":
		return LonLatToWebMercator, true
	case from == "EPSG:3857" && to == "EPSG:4326":
		return WebMercatorToLonLat, true
	}
	return nil, false
}
