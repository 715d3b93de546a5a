package georef

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/chunkvc/chunkvc/geom"
)

// findCRS reads the CRS of a data array: GDAL's _CRS attribute (wkt,
// projjson, url), the GeoZarr draft's proj:code / proj:wkt2 /
// proj:projjson, or the CF grid_mapping variable's crs_wkt or
// spatial_ref. short is an authority code when one is given, else the
// CRS's name; both are "" when nothing says.
func findCRS(attrs map[string]json.RawMessage, src Source) (short, wkt string, err error) {
	if raw, ok := attrs["_CRS"]; ok {
		var c struct {
			WKT      string          `json:"wkt"`
			PROJJSON json.RawMessage `json:"projjson"`
			URL      string          `json:"url"`
		}
		if json.Unmarshal(raw, &c) == nil {
			if s := firstOf(urlCode(c.URL), projjsonName(c.PROJJSON), wktName(c.WKT)); s != "" {
				return s, c.WKT, nil
			}
		}
	}
	code, w := str(attrs["proj:code"]), str(attrs["proj:wkt2"])
	if s := firstOf(code, projjsonName(attrs["proj:projjson"]), wktName(w)); s != "" {
		return s, w, nil
	}
	gm := gridMapping(attrs)
	if gm == "" {
		return "", "", nil
	}
	gattrs, ok, err := src.Attrs(gm)
	if err != nil {
		return "", "", &NotLocated{Reason: "grid mapping " + gm, Err: err}
	}
	if !ok {
		return "", "", nil
	}
	w = firstOf(str(gattrs["crs_wkt"]), str(gattrs["spatial_ref"]))
	return firstOf(wktName(w), str(gattrs["epsg_code"])), w, nil
}

// gridMapping is the name of the CF grid mapping variable: the
// grid_mapping attribute's first word ("crs", or "crs: x y" in CF's
// extended form).
func gridMapping(attrs map[string]json.RawMessage) string {
	f := strings.Fields(str(attrs["grid_mapping"]))
	if len(f) == 0 {
		return ""
	}
	return strings.TrimSuffix(f[0], ":")
}

// str is a JSON string's value, "" for anything else.
func str(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// urlCode reads an OGC CRS URL: .../def/crs/EPSG/0/32633 is EPSG:32633.
func urlCode(u string) string {
	i := strings.Index(u, "/def/crs/")
	if i < 0 {
		return ""
	}
	p := strings.Split(strings.Trim(u[i+len("/def/crs/"):], "/"), "/")
	if len(p) != 3 || p[0] == "" || p[2] == "" {
		return ""
	}
	return clean(p[0] + ":" + p[2])
}

// projjsonName names a PROJJSON CRS by its id, else its name.
func projjsonName(raw json.RawMessage) string {
	name, _ := geom.ProjJSONName(raw)
	return clean(name)
}

// wktID matches a WKT2 ID["EPSG",32633] or WKT1 AUTHORITY["EPSG","32633"].
var wktID = regexp.MustCompile(`^(?:ID|AUTHORITY)\[\s*"([^"]+)"\s*,\s*"?([^",\]]+)"?`)

// wktName names a WKT CRS by the authority code of its top level (an ID
// or AUTHORITY directly inside the outermost bracket), else by its name
// (the first quoted string).
func wktName(wkt string) string {
	depth, inQuote := 0, false
	for i := 0; i < len(wkt); i++ {
		switch c := wkt[i]; {
		case c == '"':
			inQuote = !inQuote
		case inQuote:
		case c == '[' || c == '(':
			depth++
		case c == ']' || c == ')':
			depth--
		case depth == 1 && (c == 'I' || c == 'A') && (i == 0 || wkt[i-1] == ',' || wkt[i-1] == ' '):
			if m := wktID.FindStringSubmatch(wkt[i:]); m != nil {
				return clean(m[1] + ":" + m[2])
			}
		}
	}
	if i := strings.IndexByte(wkt, '"'); i >= 0 {
		if j := strings.IndexByte(wkt[i+1:], '"'); j >= 0 {
			return clean(wkt[i+1 : i+1+j])
		}
	}
	return ""
}

// clean keeps a name printable and short: names end up in one-line
// outputs.
func clean(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return -1
		}
		return r
	}, strings.TrimSpace(s))
	if len(s) > 80 {
		s = fmt.Sprintf("%.77s...", s)
	}
	return s
}
