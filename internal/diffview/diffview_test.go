package diffview

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/diff"
	"github.com/chunkvc/chunkvc/geom"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
)

// raster is a 2×2-tile TIFF manifest with one overview tile and a mask
// tile over [x0, x0+200]×[0, 200] in crs; tiles listed in edited get other
// content.
func raster(path, crs string, x0 float64, edited ...string) *manifest.Manifest {
	m := &manifest.Manifest{Path: path, Format: "tiff", FormatVersion: 1, Size: 500,
		Summary: []manifest.Field{{Name: "crs", Value: crs}, {Name: "bbox", Value: fmt.Sprintf("%g,0,%g,200", x0, x0+200)}}}
	tile := func(key string, b geom.BBox) {
		seed := key
		for _, e := range edited {
			if e == key {
				seed += "edited"
			}
		}
		m.Chunks = append(m.Chunks, manifest.Chunk{Key: key, Size: 100, ID: hashing.Sum([]byte(seed)), BBox: &b})
	}
	for r := 0; r < 2; r++ {
		for c := 0; c < 2; c++ {
			tile(fmt.Sprintf("z0/r%d/c%d", r, c), geom.BBox{MinX: x0 + float64(c)*100, MinY: 100 - float64(r)*100, MaxX: x0 + float64(c+1)*100, MaxY: 200 - float64(r)*100})
		}
	}
	tile("z1/r0/c0", geom.BBox{MinX: x0, MaxX: x0 + 200, MaxY: 200})
	tile("mask/z0/r0/c0", geom.BBox{MinX: x0, MinY: 100, MaxX: x0 + 100, MaxY: 200})
	m.Chunks, _ = manifest.Normalize(m.Chunks)
	return m
}

func TestMapChangesFinestLevel(t *testing.T) {
	fd := diff.Compare(raster("a.tif", "EPSG:32633", 0), raster("a.tif", "EPSG:32633", 0, "z0/r1/c1", "z1/r0/c0", "mask/z0/r0/c0"))
	var keys []string
	for _, c := range mapChanges(&fd) {
		keys = append(keys, c.Key)
	}
	if strings.Join(keys, " ") != "z0/r1/c1" {
		t.Fatalf("map shows %q, want only the full-resolution tile", keys)
	}
}

func TestGeoJSONWithoutReprojector(t *testing.T) {
	res := &diff.Result{From: "a", To: "b", Files: []diff.FileDiff{
		diff.Compare(raster("ll.tif", "EPSG:4326", 0), raster("ll.tif", "EPSG:4326", 0, "z0/r0/c0")),
		diff.Compare(raster("utm.tif", "EPSG:32633", 500000), raster("utm.tif", "EPSG:32633", 500000, "z0/r0/c1", "z0/r1/c0")),
		diff.Compare(raster("lcc.tif", "EPSG:2154", 0), raster("lcc.tif", "EPSG:2154", 0, "z0/r0/c0")),
	}}
	var b bytes.Buffer
	note, err := GeoJSON(&b, res, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		CRS struct {
			Properties struct{ Name string } `json:"properties"`
		} `json:"crs"`
		Features []struct {
			Properties map[string]any `json:"properties"`
		} `json:"features"`
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, b.Bytes())
	}
	// The first CRS that needs reprojecting is kept in its own
	// coordinates; the next one is left out.
	if got.CRS.Properties.Name != "urn:ogc:def:crs:EPSG::32633" {
		t.Errorf("crs member %q", got.CRS.Properties.Name)
	}
	if len(got.Features) != 3 {
		t.Errorf("%d features, want 1 lon/lat and 2 UTM tiles", len(got.Features))
	}
	if !strings.Contains(note, "lcc.tif: footprints in EPSG:2154 left out") || !strings.Contains(note, "built without GDAL") {
		t.Errorf("note %q", note)
	}
}

func TestPNGWithoutRasters(t *testing.T) {
	res := &diff.Result{From: "a", To: "b", Files: []diff.FileDiff{
		diff.Compare(raster("a.tif", "EPSG:32633", 0), raster("a.tif", "EPSG:32633", 0, "z0/r0/c0"))}}
	var b bytes.Buffer
	note, err := PNG(context.Background(), &b, res, nil)
	if err != nil {
		t.Fatal(err)
	}
	if note != "drew a.tif; outlines only (built without GDAL)" {
		t.Errorf("note %q", note)
	}
	img, err := png.Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	if bb := img.Bounds(); bb.Dx() != 1024 || bb.Dy() != 1024 {
		t.Errorf("picture %v, want 1024² for a square extent", bb)
	}
	// The changed tile is the top-left quarter: tinted red there, nothing
	// coloured in the bottom-right one.
	reddish := func(r image.Rectangle) int {
		n := 0
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				if r, g, _, _ := img.At(x, y).RGBA(); r>>8 > g>>8+40 {
					n++
				}
			}
		}
		return n
	}
	if n := reddish(image.Rect(10, 10, 500, 500)); n < 400*400 {
		t.Errorf("%d red pixels over the changed tile", n)
	}
	if n := reddish(image.Rect(600, 600, 1024, 1024)); n != 0 {
		t.Errorf("%d red pixels away from the change", n)
	}
	b.Reset()
	if note, _ := PNG(context.Background(), &b, &diff.Result{}, nil); note != "no changed chunk has a footprint; the picture is empty" {
		t.Errorf("empty note %q", note)
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 5 << 30: "5.0 GiB"} {
		if got := HumanBytes(n); got != want {
			t.Errorf("HumanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// cube is a Zarr dataset manifest of array t2m (time×y, 1×4 chunks) of
// times steps, chunks listed in edited given other content.
func cube(times int, edited ...string) *manifest.Manifest {
	m := &manifest.Manifest{Path: "cube.zarr", Format: "zarr", FormatVersion: 1, Size: 100,
		Summary: []manifest.Field{{Name: "zarr", Value: "2"}, {Name: "arrays", Value: "1"},
			{Name: "array", Value: fmt.Sprintf("t2m dtype=<f4 shape=%dx8 chunks=1x4 dims=time,y order=C codecs=none fill=0", times)}}}
	for i := range times {
		for j := range 2 {
			key := fmt.Sprintf("t2m/c/%d/%d", i, j)
			seed := key
			for _, e := range edited {
				if e == key {
					seed += "edited"
				}
			}
			m.Chunks = append(m.Chunks, manifest.Chunk{Key: key, Size: 16, ID: hashing.Sum([]byte(seed))})
		}
	}
	m.Chunks, _ = manifest.Normalize(m.Chunks)
	return m
}

// A dataset's review names the array, how many of its chunks changed, the
// index ranges by dimension name, and an append as an append.
func TestZarrArrayLines(t *testing.T) {
	res := &diff.Result{From: "a", To: "b", Files: []diff.FileDiff{diff.Compare(cube(10), cube(10, "t2m/c/3/1"))}}
	var b bytes.Buffer
	if err := Text(&b, res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "t2m: 1 of 20 chunks changed (+0 -0 ~1); time 3, y 4..7") {
		t.Errorf("edit of one chunk:\n%s", b.String())
	}
	res = &diff.Result{From: "a", To: "b", Files: []diff.FileDiff{diff.Compare(cube(10), cube(12))}}
	b.Reset()
	if err := Markdown(&b, res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "t2m: 4 of 24 chunks changed (+4 -0 ~0); shape 10x8 → 12x8; time 10..11 appended") {
		t.Errorf("append of two time steps:\n%s", b.String())
	}
}

// TestTextTilesCapped: measured tiles print one line each, capped like
// chunk changes, with the rest counted.
func TestTextTilesCapped(t *testing.T) {
	f := diff.FileDiff{Path: "dem.tif", Status: diff.Modified, Format: "tiff"}
	for i := range maxListed + 5 {
		f.Tiles = append(f.Tiles, diff.TileStats{Key: fmt.Sprintf("z0/s%d", i), ChangedPixels: 3,
			Bands: []diff.BandStats{{Band: 1, Min: -1, Max: 2, Mean: 0.5}}})
	}
	var b strings.Builder
	if err := Text(&b, &diff.Result{From: "a", To: "b", Files: []diff.FileDiff{f}}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if n := strings.Count(out, "\n  tile "); n != maxListed {
		t.Errorf("%d tile lines, want %d:\n%s", n, maxListed, out)
	}
	if !strings.Contains(out, "tile     z0/s0                    3 px changed; b1 -1..2 mean 0.5\n") ||
		!strings.Contains(out, "… and 5 more tiles") {
		t.Errorf("tile lines wrong:\n%s", out)
	}
}
