package parquet

import (
	"bytes"
	"testing"

	pq "github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/chunkvc/chunkvc/formats/parquet/pqgen"
	"github.com/chunkvc/chunkvc/geom"
)

// Parquet's own GEOMETRY and GEOGRAPHY logical types (format 2.11), with
// no GeoParquet metadata, as GeoParquet 2.0 drafts write them.
type nativeGeometryRow struct {
	ID       int64  `parquet:"id"`
	Geometry []byte `parquet:"geom,geometry"`
}

type nativeGeographyRow struct {
	ID       int64  `parquet:"id"`
	Geometry []byte `parquet:"geog,geography"`
}

// nativeFile writes pqgen's points (4 row groups, each its own area) with
// parquet-go, which fills GeospatialStatistics, and returns it with the
// row groups' extents.
func nativeFile(t testing.TB, geography bool) ([]byte, []geom.BBox) {
	t.Helper()
	c := pqgen.Config{Rows: 2000, RowGroups: 4, Seed: 9, NoCovering: true}
	rows := pqgen.Generate(c)
	want := pqgen.RowGroupBBoxes(rows, c.PerGroup())
	for i := 1; i < len(want); i++ {
		if want[i] == want[0] {
			t.Fatal("row groups share an extent: the test could not tell them apart")
		}
	}
	if geography {
		out := make([]nativeGeographyRow, len(rows))
		for i, r := range rows {
			out[i] = nativeGeographyRow{r.ID, r.Geometry}
		}
		return writeGroups(t, out, c.PerGroup()), want
	}
	out := make([]nativeGeometryRow, len(rows))
	for i, r := range rows {
		out[i] = nativeGeometryRow{r.ID, r.Geometry}
	}
	return writeGroups(t, out, c.PerGroup()), want
}

// writeGroups writes rows in row groups of per rows.
func writeGroups[T any](t testing.TB, rows []T, per int) []byte {
	t.Helper()
	var b bytes.Buffer
	w := pq.NewGenericWriter[T](&b)
	for i := 0; i < len(rows); i += per {
		if _, err := w.Write(rows[i:min(i+per, len(rows))]); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// noGeoStats drops every column chunk's GeospatialStatistics.
func noGeoStats(md *format.FileMetaData) {
	eachColumn(md, func(c *format.ColumnChunk) { c.MetaData.GeospatialStatistics = format.GeospatialStatistics{} })
}

func TestNativeGeometry(t *testing.T) {
	data, want := nativeFile(t, false)
	if _, err := openPQ(data); err != nil {
		t.Fatal(err)
	}
	m := footerMeta(t, data)
	if m.rowGroups[0].cols[1].geoBBox == nil {
		t.Fatal("parquet-go wrote no geospatial statistics")
	}
	t.Run("statistics", func(t *testing.T) {
		l := layoutWith(t, Adapter{Footprints: NewFootprintCache(8)}, data)
		checkRowGroupBBoxes(t, l, want)
		if v := summaryValue(l, "crs"); v != "OGC:CRS84" {
			t.Errorf("crs %q", v)
		}
	})
	t.Run("decoded", func(t *testing.T) {
		stripped := rewrite(t, data, noGeoStats)
		if footerMeta(t, stripped).rowGroups[0].cols[1].geoBBox != nil {
			t.Fatal("statistics still there")
		}
		checkRowGroupBBoxes(t, layoutWith(t, Adapter{Footprints: NewFootprintCache(8)}, stripped), want)
	})
}

// GEOGRAPHY: statistics give footprints; without them nothing is decoded,
// since a spherical edge can leave its vertices' extent.
func TestNativeGeography(t *testing.T) {
	data, want := nativeFile(t, true)
	checkRowGroupBBoxes(t, layoutWith(t, Adapter{Footprints: NewFootprintCache(8)}, data), want)
	l := layoutWith(t, Adapter{Footprints: NewFootprintCache(8)}, rewrite(t, data, noGeoStats))
	for _, s := range l.Chunks() {
		if s.BBox != nil {
			t.Fatalf("chunk %s has footprint %v from a geography column without statistics", s.Key, *s.BBox)
		}
	}
}

func footerMeta(t *testing.T, data []byte) *fileMeta {
	t.Helper()
	m, err := decodeFooter(footerOf(data))
	if err != nil {
		t.Fatal(err)
	}
	return m
}
