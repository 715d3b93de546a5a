package parquet

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/geom"
	"github.com/chunkvc/chunkvc/hashing"
)

// geoInfo is what the adapter takes from the GeoParquet "geo" metadata.
type geoInfo struct {
	ok       bool // the geo JSON parsed
	primary  string
	crs      string
	types    []string
	fileBBox *geom.BBox
	covering [4][]string  // xmin, ymin, xmax, ymax column paths; nil if none
	encoding string       // of the primary column ("WKB", "point", …)
	decoded  []*geom.BBox // per row group, from WKB (decodeFootprints); nil if none
	// undecoded counts the row groups whose WKB could not be decoded
	// (codec, limits, bad values); undecodedWhy is the first one's reason.
	undecoded    int
	undecodedWhy string
}

type geoDoc struct {
	PrimaryColumn string `json:"primary_column"`
	Columns       map[string]struct {
		Encoding      string          `json:"encoding"`
		GeometryTypes []string        `json:"geometry_types"`
		BBox          []float64       `json:"bbox"`
		CRS           json.RawMessage `json:"crs"`
		Covering      struct {
			BBox struct {
				XMin []string `json:"xmin"`
				YMin []string `json:"ymin"`
				XMax []string `json:"xmax"`
				YMax []string `json:"ymax"`
			} `json:"bbox"`
		} `json:"covering"`
	} `json:"columns"`
}

func parseGeo(m *fileMeta) *geoInfo {
	g := &geoInfo{}
	var d geoDoc
	if !m.hasGeo {
		return nativeGeo(m, g)
	}
	if json.Unmarshal(m.geo, &d) != nil {
		return g
	}
	col, ok := d.Columns[d.PrimaryColumn]
	if !ok {
		return g
	}
	g.ok, g.primary, g.types = true, d.PrimaryColumn, col.GeometryTypes
	g.crs = crsName(col.CRS)
	g.encoding = col.Encoding
	switch b := col.BBox; len(b) {
	case 4:
		g.fileBBox = bboxIf(geom.BBox{MinX: b[0], MinY: b[1], MaxX: b[2], MaxY: b[3]})
	case 6: // xmin, ymin, zmin, xmax, ymax, zmax
		g.fileBBox = bboxIf(geom.BBox{MinX: b[0], MinY: b[1], MaxX: b[3], MaxY: b[4]})
	}
	c := col.Covering.BBox
	if len(c.XMin) > 0 && len(c.YMin) > 0 && len(c.XMax) > 0 && len(c.YMax) > 0 {
		g.covering = [4][]string{c.XMin, c.YMin, c.XMax, c.YMax}
	}
	return g
}

// nativeGeo fills g from Parquet's own GEOMETRY or GEOGRAPHY logical type
// (format 2.11) when the file has no geo metadata: the first such column
// right under the root is the primary one. Its geospatial statistics give
// row-group footprints (statsBBox); a GEOMETRY column without them is
// decoded from WKB like GeoParquet's, but a GEOGRAPHY one is not: its
// edges may curve beyond the extent of its vertices.
func nativeGeo(m *fileMeta, g *geoInfo) *geoInfo {
	for _, l := range m.top {
		if l.logical != logicalGeometry && l.logical != logicalGeography {
			continue
		}
		g.ok, g.primary, g.crs = true, string(l.name), "OGC:CRS84"
		if len(l.crs) > 0 {
			g.crs = clean(string(l.crs), 80)
		}
		if l.logical == logicalGeometry {
			g.encoding = "WKB"
		} else {
			g.encoding = "WKB (geography)"
		}
		return g
	}
	return g
}

// crsName names a GeoParquet crs value: absent means OGC:CRS84, null means
// undefined, PROJJSON is named by its id (or name).
func crsName(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "OGC:CRS84"
	}
	if string(raw) == "null" {
		return "undefined"
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return clean(s, 80)
	}
	name, ok := geom.ProjJSONName(raw)
	if !ok {
		return "unparsed"
	}
	if name != "" {
		return clean(name, 80)
	}
	return "projjson:" + hashing.Sum(raw).Short()
}

// rowGroupBBox is the footprint of row group i: its statistics (see
// statsBBox), else the extent of its decoded WKB, else the file-level geo
// bbox; nil when none is known.
func (g *geoInfo) rowGroupBBox(i int, rg *rowGroup) *geom.BBox {
	if b := g.statsBBox(rg); b != nil {
		return b
	}
	if i < len(g.decoded) && g.decoded[i] != nil {
		b := *g.decoded[i]
		return &b
	}
	if g.fileBBox != nil {
		b := *g.fileBBox
		return &b
	}
	return nil
}

// statsBBox is the footprint of a row group from GeoParquet 1.1 bbox
// covering statistics, else Parquet geospatial statistics; nil when
// neither is there.
func (g *geoInfo) statsBBox(rg *rowGroup) *geom.BBox {
	if g.covering[0] != nil {
		var v [4]float64 // by covering position: xmin, ymin, xmax, ymax
		found := 0
		for i, p := range g.covering {
			for j := range rg.cols {
				c := &rg.cols[j]
				if !c.samePath(p) {
					continue
				}
				x, ok := statValue(c, i >= 2)
				if ok {
					v[i] = x
					found++
				}
				break
			}
		}
		if found == 4 {
			if b := bboxIf(geom.FromArray(v)); b != nil {
				return b
			}
		}
	}
	for j := range rg.cols {
		c := &rg.cols[j]
		if c.geoBBox != nil && (!g.ok || c.samePath([]string{g.primary})) {
			b := *c.geoBBox
			return &b
		}
	}
	return nil
}

// statValue decodes a PLAIN DOUBLE or FLOAT min (or max) statistic.
func statValue(c *column, max bool) (float64, bool) {
	b := c.min
	if max {
		b = c.max
	}
	switch {
	case c.typ == 5 && len(b) == 8:
		return math.Float64frombits(binary.LittleEndian.Uint64(b)), true
	case c.typ == 4 && len(b) == 4:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b))), true
	}
	return 0, false
}

// bboxIf is b, or nil when b is not a valid box.
func bboxIf(b geom.BBox) *geom.BBox {
	if !b.Valid() {
		return nil
	}
	return &b
}

var codecs = []string{"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO", "BROTLI", "LZ4", "ZSTD", "LZ4_RAW"}

func codecName(c int32) string {
	if c >= 0 && int(c) < len(codecs) {
		return codecs[c]
	}
	return "codec" + strconv.Itoa(int(c))
}

// summary lists, in this order: rows, row_groups, columns, schema,
// compression, created_by, geo, crs, geometry_types, footprint_fallback,
// bbox.
func summary(m *fileMeta, g *geoInfo) []formats.Field {
	var f []formats.Field
	add := func(k, v string) { f = append(f, formats.Field{Name: k, Value: v}) }
	add("rows", strconv.FormatInt(m.numRows, 10))
	add("row_groups", strconv.Itoa(len(m.rowGroups)))
	add("columns", strconv.Itoa(m.leaves))
	add("schema", hashing.Sum(m.schemaRaw).Short())
	if c := compression(m); c != "" {
		add("compression", c)
	}
	if len(m.createdBy) > 0 {
		add("created_by", clean(string(m.createdBy), 80))
	}
	if m.hasGeo {
		add("geo", hashing.Sum(m.geo).Short())
		if !g.ok {
			add("geo_error", "unreadable geo metadata")
		}
	}
	if g.ok {
		add("crs", g.crs)
		t := "any"
		if len(g.types) > 0 {
			t = clean(strings.Join(g.types, ","), 200)
		}
		add("geometry_types", t)
	}
	if g.undecoded > 0 {
		// Why some row groups carry the file bbox (or none) instead of
		// their own extent: shown with the summary by commit and ls-chunks.
		add("footprint_fallback", clean(fmt.Sprintf("%d of %d row groups: %s", g.undecoded, len(m.rowGroups), g.undecodedWhy), 300))
	}
	bbox := g.fileBBox
	if bbox == nil {
		bbox = unionBBox(m, g)
	}
	if bbox != nil {
		add("bbox", formats.SummaryBBox(*bbox))
	}
	return f
}

// compression is one codec name when every column chunk uses it, else
// "path=CODEC" per column (codecs of a column joined by "|"), capped.
func compression(m *fileMeta) string {
	keys := newKeyer()
	var order []string
	per := map[string][]string{}
	all := map[string]bool{}
	for i := range m.rowGroups {
		for _, c := range m.rowGroups[i].cols {
			p, n := keys.column(&c), codecName(c.codec)
			if _, ok := per[p]; !ok {
				order = append(order, p)
			}
			if !contains(per[p], n) {
				per[p] = append(per[p], n)
			}
			all[n] = true
		}
	}
	if len(all) == 0 {
		return ""
	}
	if len(all) == 1 {
		return per[order[0]][0]
	}
	var parts []string
	for i, p := range order {
		if i == 16 {
			parts = append(parts, fmt.Sprintf("+%d more", len(order)-i))
			break
		}
		parts = append(parts, p+"="+strings.Join(per[p], "|"))
	}
	return clean(strings.Join(parts, ","), 400)
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func unionBBox(m *fileMeta, g *geoInfo) *geom.BBox {
	var u *geom.BBox
	for i := range m.rowGroups {
		u = geom.UnionPtr(u, g.rowGroupBBox(i, &m.rowGroups[i]))
	}
	return u
}

// clean makes s a printable-ASCII single line of at most n bytes.
func clean(s string, n int) string {
	b := make([]byte, 0, min(len(s), n))
	for i := 0; i < len(s) && len(b) < n; i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e {
			c = '?'
		}
		if c == ' ' && (len(b) == 0 || b[len(b)-1] == ' ') {
			continue
		}
		b = append(b, c)
	}
	return strings.TrimRight(string(b), " ")
}
