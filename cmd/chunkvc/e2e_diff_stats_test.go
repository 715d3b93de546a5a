package main

import (
	bin "encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/diff"
	"github.com/chunkvc/chunkvc/formats/formattest"
)

// statsRaster is a 2-band UInt16 raster held in memory: Go writes its
// samples, GDAL turns them into a COG, and the test computes the expected
// statistics from these arrays, not from anything chunkvc decodes.
type statsRaster struct {
	w, h int
	v    [2][]uint16
}

func newStatsRaster(w, h int) *statsRaster {
	r := &statsRaster{w: w, h: h}
	for b := range r.v {
		r.v[b] = make([]uint16, w*h)
		for i := range r.v[b] {
			x, y := i%w, i/w
			r.v[b][i] = uint16(1000 + x + 2*y + 300*b + (x*y)%7)
		}
	}
	return r
}

func (r *statsRaster) clone() *statsRaster {
	c := &statsRaster{w: r.w, h: r.h}
	for b := range r.v {
		c.v[b] = append([]uint16(nil), r.v[b]...)
	}
	return c
}

// cog writes r as a COG with 128-pixel tiles at dst, deflate unless
// args say otherwise.
func (r *statsRaster) cog(t *testing.T, dst string, args ...string) {
	t.Helper()
	dir := t.TempDir()
	img := filepath.Join(dir, "src.img")
	formattest.Run1(t, "gdal_create", "-q", "-of", "ENVI", "-outsize", fmt.Sprint(r.w), fmt.Sprint(r.h), "-bands", "2",
		"-ot", "UInt16", "-a_srs", "EPSG:32633", "-a_ullr", "500000", "6000000", fmt.Sprint(500000+10*r.w), fmt.Sprint(6000000-10*r.h), img)
	buf := make([]byte, 0, 4*r.w*r.h)
	for b := range r.v {
		for _, s := range r.v[b] {
			buf = bin.LittleEndian.AppendUint16(buf, s)
		}
	}
	if err := os.WriteFile(img, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	if len(args) == 0 {
		args = []string{"-co", "COMPRESS=DEFLATE", "-co", "PREDICTOR=YES"}
	}
	formattest.Run1(t, "gdal_translate", append(append([]string{"-q", "-of", "COG", "-co", "BLOCKSIZE=128",
		"-co", "OVERVIEWS=NONE"}, args...), img, dst)...)
}

// expectedTiles measures old → cur per 128-pixel tile, straight from the
// arrays: the changed tiles in row-major order.
func expectedTiles(old, cur *statsRaster) map[string]diff.TileStats {
	out := map[string]diff.TileStats{}
	for ty := 0; ty*128 < old.h; ty++ {
		for tx := 0; tx*128 < old.w; tx++ {
			ts := diff.TileStats{Key: fmt.Sprintf("z0/r%d/c%d", ty, tx), Row: ty, Col: tx}
			var sum [2]float64
			mins, maxs := [2]float64{1e18, 1e18}, [2]float64{-1e18, -1e18}
			for y := ty * 128; y < min(old.h, ty*128+128); y++ {
				for x := tx * 128; x < min(old.w, tx*128+128); x++ {
					i := y*old.w + x
					if old.v[0][i] == cur.v[0][i] && old.v[1][i] == cur.v[1][i] {
						continue
					}
					ts.ChangedPixels++
					for b := range 2 {
						d := float64(cur.v[b][i]) - float64(old.v[b][i])
						sum[b] += d
						mins[b], maxs[b] = min(mins[b], d), max(maxs[b], d)
					}
				}
			}
			if ts.ChangedPixels == 0 {
				continue
			}
			for b := range 2 {
				ts.Bands = append(ts.Bands, diff.BandStats{Band: b + 1, Min: mins[b], Max: maxs[b], Mean: sum[b] / float64(ts.ChangedPixels)})
			}
			out[ts.Key] = ts
		}
	}
	return out
}

// TestDiffStatsGolden edits known pixels of a COG (a window with a
// per-band shift, scattered single pixels, one pixel changed in band 2
// only, a partial edge tile) and requires diff --stats to report exactly
// the changed tiles, pixel counts and per-band min, max and mean that the
// arrays give, between two commits and against the working tree.
func TestDiffStatsGolden(t *testing.T) {
	formattest.RequireTool(t, "gdal_translate")
	r := newRunner(t)
	old := newStatsRaster(300, 260) // 3×3 tiles, the last row and column partial
	old.cog(t, r.path("dem.tif"))
	r.cv("init")
	r.cv("track", "*.tif")
	r.cv("commit", "-m", "v1")
	cur := old.clone()
	for y := 10; y < 40; y++ { // tile r0/c0: band 1 +5, band 2 −3
		for x := 20; x < 60; x++ {
			cur.v[0][y*300+x] += 5
			cur.v[1][y*300+x] -= 3
		}
	}
	cur.v[0][200*300+150] += 900 // tile r1/c1 (x 128–255, y 128–255)
	cur.v[1][130*300+140] -= 77  // tile r1/c1, band 2 only
	cur.v[0][259*300+299] = 0    // the last pixel: edge tile r2/c2
	cur.v[1][259*300+299] = 65535
	cur.cog(t, r.path("dem.tif"))
	want := expectedTiles(old, cur)
	if len(want) != 3 {
		t.Fatalf("fixture: %d tiles changed, want 3", len(want))
	}
	check := func(name string, args ...string) {
		t.Run(name, func(t *testing.T) {
			var res diff.Result
			out := r.cv(append([]string{"diff", "--json"}, args...)...)
			if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Files) != 1 {
				t.Fatalf("diff --json: %v\n%s", err, out)
			}
			got := res.Files[0].Tiles
			if len(got) != len(want) {
				t.Fatalf("%d tiles, want %d: %+v", len(got), len(want), got)
			}
			for _, g := range got {
				w, ok := want[g.Key]
				if !ok || g.Level != 0 || g.Row != w.Row || g.Col != w.Col || g.ChangedPixels != w.ChangedPixels || g.Error != "" || g.BBox == nil {
					t.Fatalf("tile %+v, want %+v", g, w)
				}
				for b := range w.Bands {
					if g.Bands[b] != w.Bands[b] {
						t.Errorf("tile %s band %d: %+v, want %+v", g.Key, b+1, g.Bands[b], w.Bands[b])
					}
				}
			}
		})
	}
	check("worktree", "--stats")
	r.cv("commit", "-m", "v2")
	check("commits", "--stats", "HEAD~1", "HEAD")
	text := r.cv("diff", "--stats", "HEAD~1", "HEAD")
	if !strings.Contains(text, "tile     z0/r0/c0") || !strings.Contains(text, "1200 px changed; b1 5..5 mean 5; b2 -3..-3 mean -3") {
		t.Errorf("text output lacks the tile lines:\n%s", text)
	}
	md := r.cv("diff", "--stats", "--format", "markdown", "HEAD~1", "HEAD")
	if !strings.Contains(md, "| `z0/r0/c0` | 1200 | b1: 5 / 5 / 5 b2: -3 / -3 / -3 |") {
		t.Errorf("markdown lacks the tile table:\n%s", md)
	}
	if out := r.cv("diff", "--json", "HEAD~1", "HEAD"); strings.Contains(out, `"tiles"`) {
		t.Errorf("tiles measured without --stats:\n%s", out)
	}
	r.cv("diff", "HEAD~1", "HEAD", "--format", "html", "-o", r.path("review.html"))
	page := string(r.read("review.html"))
	if !strings.Contains(page, "data:image/png;base64,") || !strings.Contains(page, `z0/r1/c1`) {
		t.Errorf("review page lacks previews or tiles (%d bytes)", len(page))
	}
	// chunkvc serve answers /review/A..B with the very same page.
	srv := startServe(t, r)
	code, hdr, body := curl(t, srv.url+"/review/HEAD~1..HEAD")
	if code != 200 || !strings.Contains(hdr, "text/html") || string(body) != page {
		t.Errorf("serve /review/HEAD~1..HEAD: %d, %d bytes, same page %v\n%s", code, len(body), string(body) == page, hdr)
	}
	if code, _, _ := curl(t, srv.url+"/review/HEAD~1..nosuchrev"); code != 404 {
		t.Errorf("serve /review with an unknown revision: %d, want 404", code)
	}
	// A revision that would read as an option, were it passed on.
	if code, _, _ := curl(t, srv.url+"/review/--output=x..HEAD"); code != 400 {
		t.Errorf("serve /review with a revision beginning with -: %d, want 400", code)
	}
}

// TestDiffStatsUnsupported requires a codec chunkvc cannot decode in Go
// to be named in one warning, with no tiles and no failure, when no GDAL
// build is there to take over.
func TestDiffStatsUnsupported(t *testing.T) {
	formattest.RequireTool(t, "gdal_translate")
	r := newRunner(t)
	// Without GDAL: a chunkvc-gdal on PATH would take --stats over.
	for i, e := range r.env {
		if dirs, ok := strings.CutPrefix(e, "PATH="); ok {
			r.env[i] = "PATH=" + strings.Join(slices.DeleteFunc(filepath.SplitList(dirs), func(d string) bool {
				_, err := os.Stat(filepath.Join(d, "chunkvc-gdal"))
				return err == nil
			}), string(filepath.ListSeparator))
		}
	}
	jpeg := []string{"-ot", "Byte", "-scale", "1000", "2200", "0", "255", "-co", "COMPRESS=JPEG"}
	old := newStatsRaster(256, 256)
	old.cog(t, r.path("photo.tif"), jpeg...)
	r.cv("init")
	r.cv("track", "*.tif")
	r.cv("commit", "-m", "v1")
	cur := old.clone()
	for i := range 2000 {
		cur.v[0][i] += 400
	}
	cur.cog(t, r.path("photo.tif"), jpeg...)
	var res diff.Result
	r.jsonOf(&res, "diff", "--stats")
	if len(res.Files) != 1 || len(res.Files[0].Tiles) != 0 || !slices.Contains(res.Files[0].Warnings, "stats: unsupported codec jpeg") {
		t.Fatalf("want one file, no tiles and the warning: %+v", res.Files)
	}
}

// lossyCOG are gdal_translate arguments of the lossy codecs chunkvc
// cannot decode in Go, for statsRaster.cog. WebP takes 3 or 4 bands of
// bytes only, so band 1 is repeated as band 3.
var lossyCOG = map[string][]string{
	"jpeg": {"-ot", "Byte", "-scale", "1000", "2200", "0", "255", "-co", "COMPRESS=JPEG"},
	"webp": {"-ot", "Byte", "-scale", "1000", "2200", "0", "255", "-b", "1", "-b", "2", "-b", "1", "-co", "COMPRESS=WEBP"},
}

// lossyWindowEdit commits photo.tif, a 256×256 COG of 128-pixel tiles
// written with codec (lossyCOG), in r (a new repository), then writes it
// again with band 1 brighter in the window x 20–80, y 150–200 (in tile
// r1/c0), uncommitted.
func lossyWindowEdit(t *testing.T, r *runner, codec []string) {
	t.Helper()
	old := newStatsRaster(256, 256)
	old.cog(t, r.path("photo.tif"), codec...)
	r.cv("init")
	r.cv("track", "*.tif")
	r.cv("commit", "-m", "v1")
	cur := old.clone()
	for y := 150; y < 200; y++ {
		for x := 20; x < 80; x++ {
			cur.v[0][y*256+x] += 400
		}
	}
	cur.cog(t, r.path("photo.tif"), codec...)
}

// TestDiffStatsGDAL: built with GDAL, diff --stats reads the tiles it
// cannot decode in Go (JPEG and WebP here) with GDAL, so the edited tiles
// are measured instead of warned about. Both are lossy, so the figures
// are checked for sign and place, not exactly.
func TestDiffStatsGDAL(t *testing.T) {
	formattest.RequireTool(t, "gdal_translate")
	formattest.RequireTool(t, "gdal-config")
	bin := diffBinary(t, "gdal")
	for codec, bands := range map[string]int{"jpeg": 2, "webp": 3} {
		t.Run(codec, func(t *testing.T) {
			r := newRunner(t)
			lossyWindowEdit(t, r, lossyCOG[codec])
			var res diff.Result
			if err := json.Unmarshal([]byte(r.dv(bin, 0, "diff", "--stats", "--json")), &res); err != nil {
				t.Fatal(err)
			}
			if len(res.Files) != 1 || len(res.Files[0].Tiles) != 1 {
				t.Fatalf("want one file with one tile: %+v", res.Files)
			}
			tl := res.Files[0].Tiles[0]
			if tl.Key != "z0/r1/c0" || tl.Error != "" || tl.ChangedPixels < 50*60 || len(tl.Bands) != bands || tl.Bands[0].Mean <= 0 {
				t.Errorf("tile %+v: want z0/r1/c0 with at least 3000 pixels changed in %d bands, band 1 brighter", tl, bands)
			}
		})
	}
}
