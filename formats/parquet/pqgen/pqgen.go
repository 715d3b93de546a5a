// Package pqgen writes deterministic GeoParquet 1.1 test files with
// parquet-go: point rows with an id, a dictionary-encoded name, a value, a
// WKB point geometry and (unless Config.NoCovering) a bbox covering struct. The Parquet adapter's tests
// and scripts/mkgeoparquet share it.
package pqgen

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"

	"github.com/chunkvc/chunkvc/geom"
)

// BBox is the GeoParquet 1.1 bbox covering struct of one row.
type BBox struct {
	XMin float64 `parquet:"xmin"`
	YMin float64 `parquet:"ymin"`
	XMax float64 `parquet:"xmax"`
	YMax float64 `parquet:"ymax"`
}

// Row is one feature.
type Row struct {
	ID       int64   `parquet:"id"`
	Name     string  `parquet:"name,dict"`
	Value    float64 `parquet:"value"`
	Geometry []byte  `parquet:"geometry"`
	BBox     BBox    `parquet:"bbox"`
}

// Config says what to write. Rows are a pure function of (Seed, row index,
// rows per group), so an edited or appended file shares every untouched row
// group byte for byte with the original (when RowGroups divides Rows; else
// appended rows first fill the base file's short last group).
type Config struct {
	Rows      int   // rows of the base file
	RowGroups int   // row groups of the base file (Rows is split evenly)
	Seed      int64 // value and position noise
	EditRows  int   // change the value column of this many rows…
	EditRG    int   // …at the start of this row group
	// EditGeometry also moves the edited rows' points to their cell's
	// south-west corner, changing the geometry column too.
	EditGeometry bool
	AppendRG     bool // write one more row group after the base ones
	// NoCovering leaves out the bbox covering column and its geo metadata
	// (a GeoParquet 1.0-style file whose row groups have no footprint
	// statistics). Off, the output is unchanged.
	NoCovering bool
	// Codec compresses every column chunk: "" or "zstd" (the default),
	// "snappy", "brotli", "lz4raw" or "none".
	Codec string
}

// PlainRow is a Row without the bbox covering column (Config.NoCovering).
type PlainRow struct {
	ID       int64   `parquet:"id"`
	Name     string  `parquet:"name,dict"`
	Value    float64 `parquet:"value"`
	Geometry []byte  `parquet:"geometry"`
}

// PerGroup is the number of rows per row group.
func (c Config) PerGroup() int {
	k := max(c.RowGroups, 1)
	return max((c.Rows+k-1)/k, 1)
}

// Generate returns the rows c describes.
func Generate(c Config) []Row {
	n := c.Rows
	per := c.PerGroup()
	if c.AppendRG {
		n += per
	}
	rows := make([]Row, n)
	for i := range rows {
		rows[i] = row(c.Seed, i, per)
	}
	if c.EditRows > 0 {
		lo := c.EditRG * per
		for i := lo; i < min(lo+c.EditRows, n); i++ {
			rows[i].Value += 1000
			if c.EditGeometry {
				cell := i / per
				x0, y0 := -180+18*float64(cell%20), -90+9*float64((cell/20)%20)
				x, y := x0, y0
				rows[i].Geometry = wkbPoint(x, y)
				rows[i].BBox = BBox{XMin: x, YMin: y, XMax: x, YMax: y}
			}
		}
	}
	return rows
}

func row(seed int64, i, per int) Row {
	h := mix(uint64(seed)*0x9e3779b97f4a7c15 + uint64(i))
	u := func() float64 { h = mix(h); return float64(h>>11) / (1 << 53) }
	// Each row group sits in its own 18°×9° cell, so row groups have
	// distinct footprints.
	cell := i / per
	x := -180 + 18*float64(cell%20) + 18*u()
	y := -90 + 9*float64((cell/20)%20) + 9*u()
	return Row{
		ID:       int64(i),
		Name:     fmt.Sprintf("name-%02d", int(u()*50)),
		Value:    math.Round(u()*1e6) / 100,
		Geometry: wkbPoint(x, y),
		BBox:     BBox{XMin: x, YMin: y, XMax: x, YMax: y},
	}
}

func mix(z uint64) uint64 { // splitmix64
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func wkbPoint(x, y float64) []byte {
	b := make([]byte, 21)
	b[0] = 1 // little endian
	binary.LittleEndian.PutUint32(b[1:], 1)
	binary.LittleEndian.PutUint64(b[5:], math.Float64bits(x))
	binary.LittleEndian.PutUint64(b[13:], math.Float64bits(y))
	return b
}

// RowGroupBBoxes returns the bbox of each row group of rows, as the writer
// splits them (per rows each).
func RowGroupBBoxes(rows []Row, per int) []geom.BBox {
	var out []geom.BBox
	for lo := 0; lo < len(rows); lo += per {
		b := geom.Empty
		for _, r := range rows[lo:min(lo+per, len(rows))] {
			b = b.Union(geom.BBox{MinX: r.BBox.XMin, MinY: r.BBox.YMin, MaxX: r.BBox.XMax, MaxY: r.BBox.YMax})
		}
		out = append(out, b)
	}
	return out
}

func geoJSON(rows []Row, covers bool) string {
	b := [4]float64{math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)}
	for _, r := range rows {
		b = [4]float64{min(b[0], r.BBox.XMin), min(b[1], r.BBox.YMin), max(b[2], r.BBox.XMax), max(b[3], r.BBox.YMax)}
	}
	if len(rows) == 0 {
		b = [4]float64{}
	}
	type covering struct {
		XMin []string `json:"xmin"`
		YMin []string `json:"ymin"`
		XMax []string `json:"xmax"`
		YMax []string `json:"ymax"`
	}
	type column struct {
		Encoding      string              `json:"encoding"`
		GeometryTypes []string            `json:"geometry_types"`
		BBox          []float64           `json:"bbox"`
		Covering      map[string]covering `json:"covering,omitempty"`
	}
	g := struct {
		Version       string            `json:"version"`
		PrimaryColumn string            `json:"primary_column"`
		Columns       map[string]column `json:"columns"`
	}{
		Version:       "1.1.0",
		PrimaryColumn: "geometry",
		Columns: map[string]column{"geometry": {
			Encoding:      "WKB",
			GeometryTypes: []string{"Point"},
			BBox:          b[:],
			Covering: map[string]covering{"bbox": {
				XMin: []string{"bbox", "xmin"}, YMin: []string{"bbox", "ymin"},
				XMax: []string{"bbox", "xmax"}, YMax: []string{"bbox", "ymax"},
			}},
		}},
	}
	if !covers {
		c := g.Columns["geometry"]
		c.Covering = nil
		g.Columns["geometry"] = c
	}
	out, err := json.Marshal(g) // struct fields in order, map keys sorted
	if err != nil {
		panic(err)
	}
	return string(out)
}

// Write writes c's file to w: zstd, a bloom filter on id, page index, geo
// metadata. The output is deterministic.
func Write(w io.Writer, c Config) error {
	rows := Generate(c)
	opts := []parquet.WriterOption{
		parquet.MaxRowsPerRowGroup(int64(c.PerGroup())),
		parquet.Compression(c.codec()),
		parquet.KeyValueMetadata("geo", geoJSON(rows, !c.NoCovering)),
		parquet.BloomFilters(parquet.SplitBlockFilter(10, "id")),
	}
	if c.NoCovering {
		plain := make([]PlainRow, len(rows))
		for i, r := range rows {
			plain[i] = PlainRow{ID: r.ID, Name: r.Name, Value: r.Value, Geometry: r.Geometry}
		}
		return write(parquet.NewGenericWriter[PlainRow](w, opts...), plain, c.PerGroup())
	}
	return write(parquet.NewGenericWriter[Row](w, opts...), rows, c.PerGroup())
}

func (c Config) codec() compress.Codec {
	switch c.Codec {
	case "snappy":
		return &parquet.Snappy
	case "brotli":
		return &parquet.Brotli
	case "lz4raw":
		return &parquet.Lz4Raw
	case "none":
		return &parquet.Uncompressed
	}
	return &parquet.Zstd
}

func write[T any](pw *parquet.GenericWriter[T], rows []T, per int) error {
	for lo := 0; lo < len(rows); lo += per {
		if _, err := pw.Write(rows[lo:min(lo+per, len(rows))]); err != nil {
			return err
		}
	}
	return pw.Close()
}

// WriteGroups writes one row group per element of groups (rows as given,
// with GeoParquet 1.1 geo metadata and its bbox covering) to w, zstd:
// for test lakes whose partitions are edited row group by row group.
func WriteGroups(w io.Writer, groups [][]Row) error {
	return WriteGroupsStream(w, len(groups), func(g int) []Row { return groups[g] })
}

// WriteGroupsStream is WriteGroups for files too large to hold in memory:
// group(g) returns row group g of n, each asked for once and in order, so
// only one is held at a time. The geo metadata, whose bbox needs every row,
// is set when the file is closed.
func WriteGroupsStream(w io.Writer, n int, group func(g int) []Row) error {
	pw := parquet.NewGenericWriter[Row](w, parquet.Compression(&parquet.Zstd))
	var extent []Row // one row whose bbox covers every row so far
	for g := range n {
		rows := group(g)
		for _, r := range rows {
			if extent == nil {
				extent = []Row{r}
			}
			b := &extent[0].BBox
			b.XMin, b.YMin = min(b.XMin, r.BBox.XMin), min(b.YMin, r.BBox.YMin)
			b.XMax, b.YMax = max(b.XMax, r.BBox.XMax), max(b.YMax, r.BBox.YMax)
		}
		if _, err := pw.Write(rows); err != nil {
			return err
		}
		if err := pw.Flush(); err != nil {
			return err
		}
	}
	pw.SetKeyValueMetadata("geo", geoJSON(extent, true))
	return pw.Close()
}

// Point is a Row at x, y with the given id, name and value.
func Point(id int64, name string, value, x, y float64) Row {
	return Row{ID: id, Name: name, Value: value, Geometry: wkbPoint(x, y), BBox: BBox{XMin: x, YMin: y, XMax: x, YMax: y}}
}
