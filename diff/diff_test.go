package diff

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/chunkvc/chunkvc/geom"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
)

// cogManifest is a 4×4-tile COG with two overview levels over
// [0,400]×[0,400]; tiles listed in edited get other content.
func cogManifest(compression string, edited ...string) *manifest.Manifest {
	m := &manifest.Manifest{Path: "dem.tif", Format: "tiff", FormatVersion: 1, Size: 1000,
		Summary: []manifest.Field{{Name: "width", Value: "400"}, {Name: "tile", Value: "100x100"},
			{Name: "compression", Value: compression}, {Name: "overviews", Value: "2"},
			{Name: "crs", Value: "EPSG:32633"}, {Name: "bbox", Value: "0,0,400,400"}}}
	ed := map[string]bool{}
	for _, k := range edited {
		ed[k] = true
	}
	for z, n := range []int{4, 2, 1} {
		side := 400 / float64(n)
		for r := 0; r < n; r++ {
			for c := 0; c < n; c++ {
				key := fmt.Sprintf("z%d/r%d/c%d", z, r, c)
				seed := key + compression
				if ed[key] {
					seed += "edited"
				}
				bb := geom.BBox{MinX: float64(c) * side, MinY: 400 - float64(r+1)*side, MaxX: float64(c+1) * side, MaxY: 400 - float64(r)*side}
				m.Chunks = append(m.Chunks, manifest.Chunk{Key: key, Size: 100, ID: hashing.Sum([]byte(seed)), BBox: &bb})
			}
		}
	}
	var err error
	if m.Chunks, err = manifest.Normalize(m.Chunks); err != nil {
		panic(err)
	}
	m.Digest = hashing.Sum([]byte(fmt.Sprint(compression, edited)))
	return m
}

func TestCompareOverviewsDoNotWidenBBox(t *testing.T) {
	old := cogManifest("deflate")
	cur := cogManifest("deflate", "z0/r1/c2", "z1/r0/c1", "z2/r0/c0")
	fd := Compare(old, cur)
	if fd.Status != Modified || fd.Chunks != (ChunkCounts{Changed: 3, Unchanged: 18}) || fd.Bytes != 300 {
		t.Fatalf("status %s, chunks %+v, bytes %d", fd.Status, fd.Chunks, fd.Bytes)
	}
	if want := (geom.BBox{MinX: 200, MinY: 200, MaxX: 300, MaxY: 300}); fd.BBox == nil || *fd.BBox != want {
		t.Fatalf("bbox %v, want the z0 tile %v", fd.BBox, want)
	}
	if fd.Extent == nil || *fd.Extent != (geom.BBox{MaxX: 400, MaxY: 400}) || fd.CRS != "EPSG:32633" {
		t.Fatalf("extent %v crs %q", fd.Extent, fd.CRS)
	}
	want := []LevelCount{{Level: 0, Changed: 1, Total: 16}, {Level: 1, Changed: 1, Total: 4}, {Level: 2, Changed: 1, Total: 1}}
	if !reflect.DeepEqual(fd.Tiff.Levels, want) {
		t.Fatalf("levels %+v", fd.Tiff.Levels)
	}
	if fd.Reencoded != "" || len(fd.Changes) != 3 || fd.Changes[0].Key != "z0/r1/c2" {
		t.Fatalf("reencoded %q, changes %+v", fd.Reencoded, fd.Changes)
	}

	// Only overviews changed: the finest changed level gives the area.
	fd = Compare(old, cogManifest("deflate", "z1/r1/c1"))
	if want := (geom.BBox{MinX: 200, MaxX: 400, MaxY: 200}); fd.BBox == nil || *fd.BBox != want {
		t.Fatalf("overview-only bbox %v, want %v", fd.BBox, want)
	}
}

func TestCompareReencode(t *testing.T) {
	fd := Compare(cogManifest("deflate"), cogManifest("zstd"))
	if fd.Reencoded != "COMPRESSION deflate → zstd" {
		t.Fatalf("reencoded %q", fd.Reencoded)
	}
	if len(fd.SummaryChanges) != 1 || fd.SummaryChanges[0] != (FieldChange{"compression", "deflate", "zstd"}) {
		t.Fatalf("summary changes %+v", fd.SummaryChanges)
	}
}

func TestCompareAddedDeletedRenamed(t *testing.T) {
	m := cogManifest("deflate")
	if fd := Compare(nil, m); fd.Status != Added || fd.Chunks.Added != 21 || fd.Bytes != 2100 || fd.OldSize != 0 {
		t.Fatalf("added: %+v", fd)
	}
	if fd := Compare(m, nil); fd.Status != Deleted || fd.Chunks.Removed != 21 || fd.Bytes != 0 || fd.Size != 0 || fd.Tiff.Levels[0].Total != 16 {
		t.Fatalf("deleted: %+v", fd)
	}
	moved := *m
	moved.Path = "archive/dem.tif"
	fd := Compare(m, &moved)
	if fd.Status != Renamed || fd.OldPath != "dem.tif" || fd.Path != "archive/dem.tif" || fd.Chunks.Unchanged != 21 || fd.BBox != nil {
		t.Fatalf("renamed: %+v", fd)
	}
}

func TestCompareParquet(t *testing.T) {
	mk := func(rows string, rgs int, geo string, edit map[string]bool) *manifest.Manifest {
		m := &manifest.Manifest{Path: "lake/a.parquet", Format: "parquet", FormatVersion: 1,
			Summary: []manifest.Field{{Name: "rows", Value: rows}, {Name: "row_groups", Value: fmt.Sprint(rgs)},
				{Name: "schema", Value: "aaaa"}, {Name: "geo", Value: geo}, {Name: "crs", Value: "OGC:CRS84"}}}
		for rg := 0; rg < rgs; rg++ {
			bb := geom.BBox{MinX: float64(rg), MaxX: float64(rg) + 1, MaxY: 1}
			for _, col := range []string{"geometry", "value"} {
				key := fmt.Sprintf("rg%d/%s/p0", rg, col)
				seed := key
				if edit[key] {
					seed += "x"
				}
				m.Chunks = append(m.Chunks, manifest.Chunk{Key: key, Size: 10, ID: hashing.Sum([]byte(seed)), BBox: &bb})
			}
		}
		m.Chunks, _ = manifest.Normalize(m.Chunks)
		return m
	}
	fd := Compare(mk("200", 2, "g1", nil), mk("300", 3, "g2", map[string]bool{"rg1/value/p0": true}))
	p := fd.Parquet
	want := &ParquetDiff{RowsOld: 200, RowsNew: 300, RowGroupsOld: 2, RowGroupsNew: 3, RowGroupsChanged: []int{1, 2},
		ColumnsChanged: []string{"geometry", "value"}, GeoChanged: true}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("parquet %+v, want %+v", p, want)
	}
	if fd.BBox == nil || *fd.BBox != (geom.BBox{MinX: 1, MaxX: 3, MaxY: 1}) {
		t.Fatalf("bbox %v", fd.BBox)
	}
}

func TestKeyParsers(t *testing.T) {
	for key, want := range map[string][3]any{
		"z0/r12/c7":         {0, false, true},
		"z3/r0/c0@0123abcd": {3, false, true},
		"mask/z1/r0/c0":     {1, true, true},
		"gap/0@ab":          {-1, false, false},
		"ifd5/z0/r0/c0":     {-1, false, false},
		// Only what the tiff adapter writes: no stray element, no
		// leading zero.
		"z0/q1":     {-1, false, false},
		"z01/r0/c0": {-1, false, false},
	} {
		lv, mask, ok := levelOf(key)
		if lv != want[0] || mask != want[1] || ok != want[2] {
			t.Errorf("levelOf(%q) = %d %v %v, want %v", key, lv, mask, ok, want)
		}
	}
	for key, want := range map[string][3]any{
		"rg7/value/p3":         {7, "value", true},
		"rg0/a.b%20c/ci":       {0, "a.b%20c", true},
		"rg12/geometry@abcdef": {12, "geometry", true},
		"gap@abc":              {0, "", false},
		"rg1/x/p1/extra":       {0, "", false},
	} {
		rg, col, ok := rowGroupOf(key)
		if rg != want[0] || col != want[1] || ok != want[2] {
			t.Errorf("rowGroupOf(%q) = %d %q %v, want %v", key, rg, col, ok, want)
		}
	}
}
