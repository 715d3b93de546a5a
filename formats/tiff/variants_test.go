package tiff

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/formats/formattest"
	"github.com/chunkvc/chunkvc/geom"
)

// TestGDALVariants builds the TIFF flavours GDAL writes and requires each
// to be read natively, round-trip byte for byte, and look right.
func TestGDALVariants(t *testing.T) {
	dir := t.TempDir()
	rgb := raster{w: 1000, h: 700, bands: 3}.write(t, dir, "rgb")
	rgba := raster{w: 600, h: 500, bands: 4}.write(t, dir, "rgba")
	half := raster{w: 1024, h: 1024, bands: 1, zeroTop: true}.write(t, dir, "half")
	toByte := []string{"-ot", "Byte", "-scale", "1000", "2000", "0", "255"}
	cog := func(extra ...string) []string {
		return append([]string{"-of", "COG", "-co", "BLOCKSIZE=256"}, extra...)
	}
	gtiff := func(extra ...string) []string { return append([]string{"-of", "GTiff"}, extra...) }
	tests := []struct {
		name  string
		src   string
		args  []string
		want  map[string]string // summary fields
		keys  []string          // keys that must exist
		check func(t *testing.T, l *formats.Layout, gi gdalInfo)
	}{
		{name: "cog_deflate_pred2", src: rgb, args: cog("-co", "COMPRESS=DEFLATE", "-co", "PREDICTOR=YES"),
			want:  map[string]string{"cog": "yes", "compression": "deflate", "predictor": "2", "tile": "256x256", "overviews": "2", "crs": "EPSG:32633", "dtype": "uint16", "bands": "3"},
			keys:  []string{"z0/r2/c3", "z1/r1/c1", "z2/r0/c0"},
			check: gdalTileCount},
		{name: "bigtiff", src: rgb, args: cog("-co", "COMPRESS=DEFLATE", "-co", "BIGTIFF=YES"),
			want: map[string]string{"bigtiff": "yes", "cog": "yes"}, check: gdalTileCount},
		{name: "bigendian", src: rgb, args: gtiff("-co", "TILED=YES", "-co", "ENDIANNESS=BIG", "-co", "COMPRESS=DEFLATE"),
			want: map[string]string{"byteorder": "big", "tile": "256x256"}, check: gdalTileCount},
		{name: "striped", src: rgb, args: gtiff("-co", "COMPRESS=DEFLATE", "-co", "BLOCKYSIZE=16"),
			want: map[string]string{"tile": "strips rps=16"}, keys: []string{"z0/s0", "z0/s43"},
			check: func(t *testing.T, l *formats.Layout, _ gdalInfo) {
				if n := len(l.Chunks()); n != 44 {
					t.Errorf("%d strips, want 44", n)
				}
			}},
		{name: "planar", src: rgb, args: gtiff("-co", "TILED=YES", "-co", "INTERLEAVE=BAND", "-co", "COMPRESS=LZW"),
			want: map[string]string{"interleave": "band"}, keys: []string{"z0/r0/c0/p0", "z0/r2/c3/p2"},
			check: func(t *testing.T, l *formats.Layout, _ gdalInfo) {
				if n := len(l.Chunks()); n != 3*12 {
					t.Errorf("%d tiles, want 36", n)
				}
			}},
		{name: "jpeg_mask", src: rgba, args: cog(append(toByte, "-colorinterp", "red,green,blue,alpha", "-co", "COMPRESS=JPEG")...),
			want: map[string]string{"compression": "jpeg", "masks": "3", "overviews": "2", "bands": "3"},
			keys: []string{"mask/z0/r1/c2", "mask/z1/r0/c0", "z1/r0/c0"},
			check: func(t *testing.T, l *formats.Layout, _ gdalInfo) {
				if n := len(l.Chunks()); n != 2*(6+2+1) {
					t.Errorf("%d chunks, want 9 image + 9 mask tiles", n)
				}
			}},
		{name: "jpeg_tables", src: rgb, args: gtiff(append(toByte, "-co", "TILED=YES", "-co", "COMPRESS=JPEG", "-co", "PHOTOMETRIC=YCBCR")...),
			want: map[string]string{"compression": "jpeg", "dtype": "uint8"}, check: gdalTileCount},
		{name: "sparse", src: half, args: gtiff("-a_nodata", "0", "-co", "TILED=YES", "-co", "SPARSE_OK=TRUE", "-co", "COMPRESS=DEFLATE"),
			check: func(t *testing.T, l *formats.Layout, _ gdalInfo) {
				ch := l.Chunks()
				if len(ch) != 8 {
					t.Errorf("%d tiles stored, want the 8 of the bottom half", len(ch))
				}
				for _, s := range ch {
					if !strings.HasPrefix(s.Key, "z0/r2/") && !strings.HasPrefix(s.Key, "z0/r3/") {
						t.Errorf("sparse tile %s has bytes", s.Key)
					}
				}
			}},
		{name: "lzw", src: rgb, args: cog("-co", "COMPRESS=LZW"), want: map[string]string{"compression": "lzw"}, check: gdalTileCount},
		{name: "zstd", src: rgb, args: cog("-co", "COMPRESS=ZSTD"), want: map[string]string{"compression": "zstd"}, check: gdalTileCount},
		{name: "none", src: rgb, args: cog("-co", "COMPRESS=NONE"), want: map[string]string{"compression": "none"}, check: gdalTileCount},
		{name: "float32", src: rgb, args: cog("-ot", "Float32", "-co", "COMPRESS=DEFLATE", "-co", "PREDICTOR=3"),
			want: map[string]string{"dtype": "float32", "predictor": "3"}, check: gdalTileCount},
	}
	var files []formattest.File
	native := map[string]bool{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name+".tif")
			data := translate(t, tc.src, p, tc.args...)
			files = append(files, formattest.File{Name: tc.name, Data: data})
			native[tc.name] = true
			l := layoutOf(t, data)
			for k, v := range tc.want {
				if got := field(l, k); got != v {
					t.Errorf("summary %s = %q, want %q (summary %v)", k, got, v, l.Summary)
				}
			}
			have := map[string]bool{}
			for _, s := range l.Chunks() {
				have[s.Key] = true
				if s.BBox == nil {
					t.Errorf("chunk %s has no bbox", s.Key)
				}
			}
			for _, k := range tc.keys {
				if !have[k] {
					t.Errorf("no chunk %s", k)
				}
			}
			gi := info(t, p)
			checkBBox(t, l, gi)
			if tc.check != nil {
				tc.check(t, l, gi)
			}
		})
	}
	formattest.Run(t, Adapter{}, files, native)
}

// gdalTileCount requires one chunk per tile GDAL's structure implies
// (full resolution plus overviews, block size from gdalinfo).
func gdalTileCount(t *testing.T, l *formats.Layout, gi gdalInfo) {
	t.Helper()
	bw, bh := gi.Bands[0].Block[0], gi.Bands[0].Block[1]
	count := func(w, h int) int { return ((w + bw - 1) / bw) * ((h + bh - 1) / bh) }
	want := count(gi.Size[0], gi.Size[1])
	for _, o := range gi.Bands[0].Overviews {
		want += count(o.Size[0], o.Size[1])
	}
	if field(l, "interleave") == "band" {
		want *= len(gi.Bands)
	}
	if got := len(l.Chunks()) + len(l.Aliases); got != want {
		t.Errorf("%d chunks + %d aliases, GDAL's structure implies %d blocks", len(l.Chunks()), len(l.Aliases), want)
	}
}

// checkBBox compares the summary bbox with gdalinfo's corner coordinates,
// and the union of full-resolution chunk footprints with it.
func checkBBox(t *testing.T, l *formats.Layout, gi gdalInfo) {
	t.Helper()
	c := gi.CornerCoordinates
	want := geom.Empty
	for _, p := range [][2]float64{c.UpperLeft, c.LowerLeft, c.UpperRight, c.LowerRight} {
		want = want.Extend(p[0], p[1])
	}
	if got := field(l, "bbox"); got != formats.SummaryBBox(want) && !near(parseBBox(got), want) {
		t.Errorf("summary bbox %s, gdalinfo corners give %s", got, formats.SummaryBBox(want))
	}
	union := geom.Empty
	n := 0
	for _, s := range l.Chunks() {
		if s.BBox == nil || !strings.HasPrefix(s.Key, "z0/") {
			continue
		}
		n++
		union = union.Union(*s.BBox)
	}
	if n > 0 && !near(union, want) && field(l, "sparse") == "" {
		t.Errorf("union of %d full-resolution chunk bboxes %v, gdalinfo corners %v", n, union, want)
	}
}

func near(a, b geom.BBox) bool {
	x, y := a.Array(), b.Array()
	for i := range x {
		// gdalinfo -json rounds geographic coordinates to 7 decimals.
		if math.Abs(x[i]-y[i]) > 1e-7+1e-9*math.Abs(y[i]) {
			return false
		}
	}
	return true
}

// parseBBox reads a summary bbox; a field that does not parse compares
// as the zero box.
func parseBBox(s string) geom.BBox {
	b, _ := geom.Parse(s)
	return b
}

// TestCorpusBBox cross-checks footprints with `gdalinfo -json` on every
// georeferenced, GDAL-readable corpus TIFF.
func TestCorpusBBox(t *testing.T) {
	formattest.RequireTool(t, "gdalinfo")
	ok := gdalReadable(t)
	dir := formattest.CorpusDir(t)
	n := 0
	for _, f := range corpusTIFFs(t) {
		if !ok[f.Name] {
			continue
		}
		l := layoutOf(t, f.Data)
		if field(l, "bbox") == "" {
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			gi := info(t, filepath.Join(dir, f.Name))
			checkBBox(t, l, gi)
		})
		n++
	}
	if n < 5 {
		t.Errorf("only %d georeferenced corpus TIFFs", n)
	}
}
