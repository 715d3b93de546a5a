package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chunkvc/chunkvc/diff"
	"github.com/chunkvc/chunkvc/formats/formattest"
	"github.com/chunkvc/chunkvc/geom"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/internal/diffview"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata/diff")

// diffBinaries are chunkvc builds with the diff commands, by build tags.
var diffBinaries sync.Map // tags → *diffBuild

type diffBuild struct {
	once sync.Once
	path string
	err  error
}

// diffBinary returns a chunkvc built with tags that has the diff commands.
// Until root.go registers them, the build overlays a copy of root.go that
// does, so these tests never depend on an edit elsewhere.
func diffBinary(t *testing.T, tags string) string {
	t.Helper()
	if tags == "" && binaryHasDiff() {
		return binary
	}
	v, _ := diffBinaries.LoadOrStore(tags, &diffBuild{})
	b := v.(*diffBuild)
	b.once.Do(func() {
		dir, err := os.MkdirTemp(filepath.Dir(binary), "diff-")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, "chunkvc")
		args := []string{"build", "-o", b.path}
		if tags != "" {
			args = append(args, "-tags", tags)
		}
		src, err := os.ReadFile("root.go")
		if err != nil {
			b.err = err
			return
		}
		if !bytes.Contains(src, []byte("newDiffCmd(")) {
			patched := bytes.Replace(src, []byte("root.AddCommand(\n"), []byte("root.AddCommand(\n\t\tnewDiffCmd(g),\n\t\tnewDiffTextconvCmd(g),\n"), 1)
			abs, _ := filepath.Abs("root.go")
			over := filepath.Join(dir, "root.go")
			ov, _ := json.Marshal(map[string]map[string]string{"Replace": {abs: over}})
			err = os.WriteFile(over, patched, 0o644)
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, "overlay.json"), ov, 0o644)
			}
			if err != nil {
				b.err = err
				return
			}
			args = append(args, "-overlay", filepath.Join(dir, "overlay.json"))
		}
		out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

func binaryHasDiff() bool {
	src, err := os.ReadFile("root.go")
	return err == nil && bytes.Contains(src, []byte("newDiffCmd("))
}

// dv runs the diff-capable chunkvc and fails unless it exits with want.
func (r *runner) dv(bin string, want int, args ...string) string {
	r.t.Helper()
	res := r.run(bin, args...)
	if res.code != want {
		r.t.Fatalf("chunkvc %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), res.code, want, res.stdout, res.stderr)
	}
	return res.stdout
}

// diffJSON mirrors diff --format json.
type diffJSON struct {
	From       string `json:"from"`
	To         string `json:"to"`
	FromCommit string `json:"from_commit"`
	ToCommit   string `json:"to_commit"`
	Files      []struct {
		Path    string `json:"path"`
		OldPath string `json:"old_path"`
		Status  string `json:"status"`
		Format  string `json:"format"`
		Chunks  struct {
			Added, Removed, Changed, Unchanged int
		} `json:"chunks"`
		Bytes  int64       `json:"bytes"`
		BBox   *[4]float64 `json:"bbox"`
		Extent *[4]float64 `json:"extent"`
		CRS    string      `json:"crs"`
		Tiff   *struct {
			Levels []struct {
				Level, Changed, Total int
			} `json:"levels"`
		} `json:"tiff"`
		Parquet    *diff.ParquetDiff    `json:"parquet"`
		FlatGeobuf *diff.FlatGeobufDiff `json:"flatgeobuf"`
		Reencoded  string               `json:"reencoded"`
		Changes    []struct {
			Key    string      `json:"key"`
			Change string      `json:"change"`
			Bytes  int64       `json:"bytes"`
			BBox   *[4]float64 `json:"bbox"`
		} `json:"changes"`
	} `json:"files"`
}

func (r *runner) diffJSON(bin string, args ...string) diffJSON {
	r.t.Helper()
	out := r.dv(bin, 0, append([]string{"diff", "--format", "json"}, args...)...)
	var d diffJSON
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		r.t.Fatalf("diff --format json: %v\n%s", err, out)
	}
	return d
}

// Golden fixtures: manifests written by hand, so the goldens depend on no
// tool version, path or time.

func fixChunk(key, seed string, size int64, bb ...float64) manifest.Chunk {
	c := manifest.Chunk{Key: key, Size: size, ID: hashing.Sum([]byte(key + "|" + seed))}
	if len(bb) == 4 {
		b := geom.FromArray([4]float64(bb))
		c.BBox = &b
	}
	return c
}

func fixManifest(path, format string, summary [][2]string, chunks []manifest.Chunk) *manifest.Manifest {
	m := &manifest.Manifest{Path: path, Format: format, FormatVersion: 1}
	for _, s := range summary {
		m.Summary = append(m.Summary, manifest.Field{Name: s[0], Value: s[1]})
	}
	var err error
	if m.Chunks, err = manifest.Normalize(chunks); err != nil {
		panic(err)
	}
	for _, c := range m.Chunks {
		m.Size += c.Size
	}
	m.Size += 512
	enc, _ := m.Encode()
	m.Digest = hashing.Sum(enc)
	return m
}

// fixCOG is a 4×4-tile COG with overviews over a 40960 m square in UTM 33N.
func fixCOG(path, compression string, edited ...string) *manifest.Manifest {
	ed := map[string]bool{}
	for _, k := range edited {
		ed[k] = true
	}
	var chunks []manifest.Chunk
	for z, n := range []int{4, 2, 1} {
		side := 40960 / float64(n)
		for r := 0; r < n; r++ {
			for c := 0; c < n; c++ {
				key := fmt.Sprintf("z%d/r%d/c%d", z, r, c)
				seed, size := compression, int64(10000+100*z+10*r+c)
				if ed[key] {
					seed, size = seed+"+edit", size+321
				}
				chunks = append(chunks, fixChunk(key, seed, size, 500000+float64(c)*side, 4640960-float64(r+1)*side, 500000+float64(c+1)*side, 4640960-float64(r)*side))
			}
		}
	}
	return fixManifest(path, "tiff", [][2]string{{"cog", "yes"}, {"width", "1024"}, {"height", "1024"}, {"tile", "256x256"},
		{"compression", compression}, {"predictor", "2"}, {"overviews", "2"}, {"crs", "EPSG:32633"}, {"bbox", "500000,4600000,540960,4640960"}}, chunks)
}

func fixParquet(rows, rgs int, geo string, edited ...string) *manifest.Manifest {
	ed := map[string]bool{}
	for _, k := range edited {
		ed[k] = true
	}
	var chunks []manifest.Chunk
	for rg := 0; rg < rgs; rg++ {
		x := 5 + float64(rg)
		for _, col := range []string{"geometry", "id", "value"} {
			key := fmt.Sprintf("rg%d/%s/p0", rg, col)
			seed := ""
			if ed[key] {
				seed = "edit"
			}
			chunks = append(chunks, fixChunk(key, seed, 4096, x, 45, x+1, 46))
		}
	}
	return fixManifest("lake/part-0.parquet", "parquet", [][2]string{{"rows", fmt.Sprint(rows)}, {"row_groups", fmt.Sprint(rgs)},
		{"columns", "3"}, {"schema", "5d41402abc4b"}, {"geo", geo}, {"crs", "OGC:CRS84"}, {"geometry_types", "Point"},
		{"bbox", fmt.Sprintf("5,45,%d,46", 5+rgs)}}, chunks)
}

func fixFGB(features int, crs string, edited ...int) *manifest.Manifest {
	ed := map[int]bool{}
	for _, k := range edited {
		ed[k] = true
	}
	var chunks []manifest.Chunk
	// Block keys name their first feature, so an edited block is a new key.
	for i := 0; i < 6; i++ {
		first := fmt.Sprint("feature", i)
		if ed[i] {
			first += "+edit"
		}
		x := 5 + float64(i)
		chunks = append(chunks, fixChunk("f/"+hashing.Sum([]byte(first)).String()[:16], first, 65536, x, 50, x+1, 51))
	}
	return fixManifest("roads.fgb", "flatgeobuf", [][2]string{{"features", fmt.Sprint(features)}, {"geometry_type", "LineString"},
		{"crs", crs}, {"bbox", "5,50,11,51"}, {"columns", "2 name,lanes"}, {"index", "derived-ok"}}, chunks)
}

func fixGeneric(path, seed string) *manifest.Manifest {
	return fixManifest(path, "generic", nil, []manifest.Chunk{fixChunk("cdc@", seed+"1", 70000), fixChunk("cdc@", seed+"2", 50000)})
}

// goldenResult has one file of every kind and status.
func goldenResult() *diff.Result {
	moved := *fixGeneric("old/notes.bin", "n")
	moved.Path = "archive/notes.bin"
	files := []diff.FileDiff{
		diff.Compare(fixCOG("dem.tif", "deflate"), fixCOG("dem.tif", "deflate", "z0/r1/c2", "z1/r0/c1", "z2/r0/c0")),
		diff.Compare(fixCOG("ortho.tif", "deflate"), fixCOG("ortho.tif", "zstd")),
		diff.Compare(fixParquet(2000, 3, "0a1b2c3d4e5f"), fixParquet(2500, 4, "6a7b8c9d0e1f", "rg1/value/p0")),
		diff.Compare(fixFGB(1200, "EPSG:4326"), fixFGB(1210, "EPSG:4326", 2, 3)),
		diff.Compare(nil, fixGeneric("added.bin", "a")),
		diff.Compare(fixGeneric("gone.bin", "g"), nil),
		diff.Compare(fixGeneric("old/notes.bin", "n"), &moved),
	}
	return &diff.Result{From: "v1", To: "v2", Files: files}
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", "diff", name)
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -run TestDiffGolden -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -run TestDiffGolden -update rewrites it)\n--- got:\n%s", name, got)
	}
}

func TestDiffGolden(t *testing.T) {
	res := goldenResult()
	render := map[string]func(*bytes.Buffer) error{
		"fixture.txt": func(b *bytes.Buffer) error { return diffview.Text(b, res) },
		"fixture.md":  func(b *bytes.Buffer) error { return diffview.Markdown(b, res) },
		"fixture.json": func(b *bytes.Buffer) error {
			g := &globalOptions{stdout: b}
			return g.printJSON(res)
		},
		"fixture.geojson": func(b *bytes.Buffer) error {
			// Longitude/latitude files only: the output is then the same
			// with and without GDAL.
			ll := &diff.Result{From: res.From, To: res.To}
			for _, f := range res.Files {
				if diffview.IsLonLat(f.CRS) {
					ll.Files = append(ll.Files, f)
				}
			}
			note, err := diffview.GeoJSON(b, ll, diffToLonLat())
			if note != "" {
				t.Errorf("geojson note for lon/lat files: %s", note)
			}
			return err
		},
		"empty.txt": func(b *bytes.Buffer) error {
			return diffview.Text(b, &diff.Result{From: "HEAD", To: diff.WorkTree, Files: []diff.FileDiff{}})
		},
		"empty.md": func(b *bytes.Buffer) error {
			return diffview.Markdown(b, &diff.Result{From: "HEAD", To: diff.WorkTree, Files: []diff.FileDiff{}})
		},
	}
	for name, fn := range render {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := fn(&b); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, name, b.Bytes())
		})
	}
	var b bytes.Buffer
	m := fixCOG("dem.tif", "deflate")
	enc, _ := m.Encode()
	if err := writeTextconv(&b, enc); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "textconv.txt", b.Bytes())
}

// The pure-Go picture: outlines of a vector file's blocks, changed ones red.
func TestDiffPNGOutlines(t *testing.T) {
	res := &diff.Result{From: "v1", To: "v2", Files: []diff.FileDiff{
		diff.Compare(fixFGB(1200, "EPSG:4326"), fixFGB(1210, "EPSG:4326", 2))}}
	name := filepath.Join(t.TempDir(), "d.png")
	if _, err := writeDiffPNG(context.Background(), name, res, nil); err != nil {
		t.Fatal(err)
	}
	img := decodePNG(t, name)
	if b := img.Bounds(); b.Dx() != 1024 || b.Dy() != 171 {
		t.Fatalf("picture is %v, want 1024×171 (the 6°×1° extent)", b)
	}
	// Block 2 spans longitudes 7..8: x 341..512 of 1024.
	if n := markedPixels(img, image.Rect(341, 0, 512, 171)); n < 100 {
		t.Fatalf("%d marked pixels over the changed block", n)
	}
	if n := markedPixels(img, image.Rect(600, 0, 1024, 171)); n != 0 {
		t.Fatalf("%d marked pixels away from the change", n)
	}
}

func decodePNG(t *testing.T, name string) image.Image {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s is not a PNG: %v", name, err)
	}
	return img
}

// markedPixels counts the pixels of r drawn in a change colour (red, green,
// blue: saturated, unlike the grey grid and raster preview).
func markedPixels(img image.Image, r image.Rectangle) int {
	n := 0
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			R, G, B, _ := img.At(x, y).RGBA()
			hi, lo := max(R, G, B)>>8, min(R, G, B)>>8
			if hi-lo > 100 {
				n++
			}
		}
	}
	return n
}

// buildCOG writes a 4096² single-band COG (optionally with a raised window)
// to dst, in UTM 33N with 10 m pixels.
func buildCOG(t *testing.T, mk, dst string, size int, edit ...string) {
	t.Helper()
	raw := filepath.Join(t.TempDir(), "dem.bin")
	args := append([]string{"raster", "-o", raw, "-size", fmt.Sprint(size)}, edit...)
	if out, err := exec.Command(mk, args...).CombinedOutput(); err != nil {
		t.Fatalf("mkdemo: %v %s", err, out)
	}
	formattest.Run1(t, "gdal_translate", "-q", "-of", "COG", "-co", "COMPRESS=DEFLATE", "-co", "PREDICTOR=2", "-co", "BLOCKSIZE=256",
		"-a_srs", "EPSG:32633", "-a_ullr", "500000", fmt.Sprint(4600000+size*10), fmt.Sprint(500000+size*10), "4600000", raw, dst)
}

// Issue 7's headline: a 96×96-pixel edit in a 4096×4096 COG with
// overviews. The JSON names about one tile per level and a bbox that holds
// the edited window and covers well under a quarter of the image; the
// GeoJSON opens in GDAL; the PNG is a PNG; the raw manifest diff is a few
// dozen lines, and the textconv diff names the tile.
func TestDiffCOGEdit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two 4096² COGs")
	}
	formattest.RequireTool(t, "gdal_translate")
	formattest.RequireTool(t, "ogrinfo")
	bin := diffBinary(t, "")
	mk := mkdemo(t)
	r := newRunner(t)
	buildCOG(t, mk, r.path("dem.tif"), 4096)
	r.cv("init")
	r.cv("track", "*.tif")
	r.cv("commit", "-m", "v1")
	r.dv(bin, 0, "diff", "--exit-code")
	buildCOG(t, mk, r.path("dem.tif"), 4096, "-edit", "1900,1900,96,96")
	storeBefore := countFiles(t, r.path(".git/chunkvc/store"))

	wt := r.diffJSON(bin)
	if countFiles(t, r.path(".git/chunkvc/store")) != storeBefore {
		t.Fatal("diff stored chunks")
	}
	r.dv(bin, 1, "diff", "--exit-code")
	r.cv("commit", "-m", "v2")
	for _, args := range [][]string{{"HEAD~1", "HEAD"}, {"HEAD~1..HEAD"}} {
		d := r.diffJSON(bin, args...)
		if len(d.Files) != 1 || len(wt.Files) != 1 {
			t.Fatalf("diff %v: %d files, worktree diff %d", args, len(d.Files), len(wt.Files))
		}
		a, b := d.Files[0], wt.Files[0]
		if a.Chunks != b.Chunks || *a.BBox != *b.BBox || a.Bytes != b.Bytes {
			t.Fatalf("diff %v disagrees with the working-tree diff: %+v vs %+v", args, a, b)
		}
		if d.FromCommit == "" || d.ToCommit == "" {
			t.Fatalf("diff %v: commits %q %q", args, d.FromCommit, d.ToCommit)
		}
	}
	f := wt.Files[0]
	var keys []string
	for _, c := range f.Changes {
		keys = append(keys, c.Key)
	}
	// Pixels 1900..1996 in x and y, 10 m pixels from (500000, 4640960).
	win := [4]float64{500000 + 1900*10, 4640960 - 1996*10, 500000 + 1996*10, 4640960 - 1900*10}
	b, e := f.BBox, f.Extent
	frac := (b[2] - b[0]) * (b[3] - b[1]) / ((e[2] - e[0]) * (e[3] - e[1]))
	t.Logf("changed tiles %v (%d), bbox %v = %.4f of the extent, %d bytes to move", keys, len(keys), *b, frac, f.Bytes)
	if f.Status != "modified" || f.Format != "tiff" || f.CRS != "EPSG:32633" || len(keys) == 0 || len(keys) > 12 || !strings.Contains(strings.Join(keys, " "), "z0/r7/c7") {
		t.Fatalf("file %+v", f)
	}
	if b[0] > win[0] || b[1] > win[1] || b[2] < win[2] || b[3] < win[3] || frac >= 0.25 {
		t.Fatalf("bbox %v does not hold the window %v or covers %.3f of the image", *b, win, frac)
	}
	if f.Tiff == nil || f.Tiff.Levels[0].Level != 0 || f.Tiff.Levels[0].Changed != 1 || f.Tiff.Levels[0].Total != 256 {
		t.Fatalf("levels %+v", f.Tiff)
	}

	gj := filepath.Join(t.TempDir(), "diff.geojson")
	if err := os.WriteFile(gj, []byte(r.dv(bin, 0, "diff", "HEAD~1", "HEAD", "--format", "geojson")), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := formattest.Run1(t, "ogrinfo", "-ro", "-al", "-so", gj); !strings.Contains(out, "Feature Count: 1") {
		t.Fatalf("ogrinfo on the GeoJSON:\n%s", out)
	}

	pngName := filepath.Join(t.TempDir(), "diff.png")
	r.dv(bin, 0, "diff", "HEAD~1", "HEAD", "--png", pngName, "-q")
	img := decodePNG(t, pngName)
	if img.Bounds().Dx() != 1024 || img.Bounds().Dy() != 1024 {
		t.Fatalf("picture is %v", img.Bounds())
	}
	// Tile z0/r7/c7 is pixels 448..512 of 1024 in both directions.
	if n := markedPixels(img, image.Rect(440, 440, 520, 520)); n < 200 {
		t.Fatalf("%d marked pixels on the changed tile", n)
	}
	alone := filepath.Join(t.TempDir(), "alone.png")
	if out := r.dv(bin, 0, "diff", "HEAD~1", "HEAD", "--format", "png", "-o", alone, "-q"); out != "" {
		t.Fatalf("--format png printed %q", out)
	}
	want, errA := os.ReadFile(pngName)
	got, errB := os.ReadFile(alone)
	if errA != nil || errB != nil || !bytes.Equal(want, got) {
		t.Fatalf("--format png -o wrote %d bytes, --png %d: not the same picture", len(got), len(want))
	}

	raw := r.git("diff", "--no-textconv", "HEAD~1", "HEAD", "--", ".chunkvc/manifests/dem.tif")
	lines := strings.Count(raw, "\n")
	t.Logf("raw git diff of the manifest: %d lines", lines)
	if lines > 80 {
		t.Fatalf("raw manifest diff has %d lines:\n%s", lines, raw)
	}
	r.write(".gitattributes", []byte(repo.TextconvAttribute+"\n"))
	r.git("config", repo.TextconvConfigKey, bin+" diff-textconv")
	tc := r.git("diff", "HEAD~1", "HEAD", "--", ".chunkvc/manifests/dem.tif")
	if !strings.Contains(tc, "+z0/r7/c7 ") || !strings.Contains(tc, "-z0/r7/c7 ") || strings.Contains(tc, "blake3:") {
		t.Fatalf("textconv diff:\n%s", tc)
	}
	if md := r.dv(bin, 0, "diff", "HEAD~1", "HEAD", "--format", "markdown"); !strings.Contains(md, "| `dem.tif` | modified | tiff |") {
		t.Fatalf("markdown:\n%s", md)
	}
}

func countFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return err
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return n
}

// With GDAL: the picture has the raster underneath, and GeoJSON is in
// longitude/latitude.
func TestDiffWithGDAL(t *testing.T) {
	formattest.RequireTool(t, "gdal_translate")
	formattest.RequireTool(t, "gdal-config")
	bin := diffBinary(t, "gdal")
	mk := mkdemo(t)
	r := newRunner(t)
	buildCOG(t, mk, r.path("dem.tif"), 1024)
	r.cv("init")
	r.cv("track", "*.tif")
	r.cv("commit", "-m", "v1")
	buildCOG(t, mk, r.path("dem.tif"), 1024, "-edit", "600,100,40,40")
	pngName := filepath.Join(t.TempDir(), "diff.png")
	out := r.run(bin, "diff", "--png", pngName)
	if out.code != 0 || strings.Contains(out.stderr, "outlines only") || strings.Contains(out.stderr, "no raster preview") {
		t.Fatalf("diff --png: exit %d\n%s", out.code, out.stderr)
	}
	img := decodePNG(t, pngName)
	// The terrain shows through: many distinct grey levels off the grid.
	levels := map[uint32]bool{}
	for y := 10; y < 1024; y += 37 {
		for x := 10; x < 1024; x += 41 {
			g, _, _, _ := img.At(x, y).RGBA()
			levels[g>>8] = true
		}
	}
	if len(levels) < 20 {
		t.Fatalf("preview has %d grey levels: no raster rendered?", len(levels))
	}
	// Tile z0/r0/c2 (pixels 512..768 of 1024 across, 0..256 down).
	if n := markedPixels(img, image.Rect(500, 0, 780, 270)); n < 200 {
		t.Fatalf("%d marked pixels on the changed tile", n)
	}
	var fc struct {
		CRS      any `json:"crs"`
		Features []struct {
			Geometry struct {
				Coordinates [][][2]float64 `json:"coordinates"`
			} `json:"geometry"`
		} `json:"features"`
	}
	if err := json.Unmarshal([]byte(r.dv(bin, 0, "diff", "--format", "geojson")), &fc); err != nil {
		t.Fatal(err)
	}
	if fc.CRS != nil || len(fc.Features) != 1 {
		t.Fatalf("geojson crs %v, %d features", fc.CRS, len(fc.Features))
	}
	for _, p := range fc.Features[0].Geometry.Coordinates[0] {
		// UTM 33N easting 500000.. is near 15°E; northing 4.6e6 near 41.5°N.
		if p[0] < 14.9 || p[0] > 15.2 || p[1] < 41.4 || p[1] > 41.7 {
			t.Fatalf("point %v is not longitude/latitude near 15°E 41.5°N", p)
		}
	}
}

// Working tree against HEAD and an older revision: added, deleted, renamed
// and modified files, Parquet row groups and columns, path limits.
func TestDiffWorktreeStatuses(t *testing.T) {
	gen := buildTool(t, "../../scripts/mkgeoparquet")
	bin := diffBinary(t, "")
	r := newRunner(t)
	pq := func(extra ...string) {
		runTool(t, gen, append([]string{"-o", r.path("lake/part-0.parquet"), "-rows", "20000", "-rowgroups", "4", "-seed", "1"}, extra...)...)
	}
	r.write("lake/README", []byte("partitioned lake\n"))
	pq()
	r.write("data/a.bin", randomBytes(300<<10, 1))
	r.write("data/b.bin", randomBytes(200<<10, 2))
	r.cv("init")
	r.cv("track", "lake/*.parquet", "data/*.bin")
	r.cv("commit", "-m", "v1")
	if d := r.diffJSON(bin); len(d.Files) != 0 || d.From != "HEAD" || d.To != "worktree" {
		t.Fatalf("clean tree: %+v", d)
	}

	pq("-edit-rows", "100", "-edit-rg", "2")
	if err := os.Rename(r.path("data/a.bin"), r.path("data/renamed.bin")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(r.path("data/b.bin")); err != nil {
		t.Fatal(err)
	}
	r.write("data/c.bin", randomBytes(100<<10, 3))
	d := r.diffJSON(bin)
	got := map[string]string{}
	for _, f := range d.Files {
		got[f.Path] = f.Status + " " + f.OldPath
	}
	want := map[string]string{"lake/part-0.parquet": "modified ", "data/renamed.bin": "renamed data/a.bin",
		"data/b.bin": "deleted ", "data/c.bin": "added "}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("statuses %v, want %v", got, want)
	}
	for _, f := range d.Files {
		switch f.Path {
		case "lake/part-0.parquet":
			p := f.Parquet
			if p == nil || fmt.Sprint(p.RowGroupsChanged) != "[2]" || fmt.Sprint(p.ColumnsChanged) != "[value]" || p.RowsOld != 20000 || p.RowsNew != 20000 || p.SchemaChanged {
				t.Fatalf("parquet %+v", p)
			}
			if f.BBox == nil || f.Extent == nil || f.BBox[2]-f.BBox[0] >= f.Extent[2]-f.Extent[0] && f.BBox[3]-f.BBox[1] >= f.Extent[3]-f.Extent[1] {
				t.Fatalf("parquet bbox %v of extent %v", f.BBox, f.Extent)
			}
		case "data/renamed.bin":
			if f.Chunks.Added+f.Chunks.Removed+f.Chunks.Changed != 0 || f.Bytes != 0 {
				t.Fatalf("rename moves data: %+v", f)
			}
		case "data/c.bin":
			if f.Bytes != 100<<10 || f.Format != "generic" {
				t.Fatalf("added: %+v", f)
			}
		}
	}
	if d := r.diffJSON(bin, "--", "lake"); len(d.Files) != 1 || d.Files[0].Path != "lake/part-0.parquet" {
		t.Fatalf("diff -- lake: %+v", d.Files)
	}
	r.cv("commit", "-m", "v2")
	// One revision: the working tree (now v2) against v1.
	if d := r.diffJSON(bin, "HEAD~1"); len(d.Files) != 4 {
		t.Fatalf("diff HEAD~1: %d files", len(d.Files))
	}
	if res := r.run(bin, "diff", "a", "b", "c"); res.code != 2 {
		t.Fatalf("three revisions: exit %d", res.code)
	}
	if res := r.run(bin, "diff", "--format", "yaml"); res.code != 2 {
		t.Fatalf("--format yaml: exit %d", res.code)
	}
	if out := r.dv(bin, 0, "diff", "HEAD~1", "HEAD"); !strings.Contains(out, "renamed   data/renamed.bin") || !strings.Contains(out, "row groups  4 → 4; changed: 2") {
		t.Fatalf("text:\n%s", out)
	}
}

// FlatGeobuf: the feature set difference narrows the changed area to the
// edited points.
func TestDiffFlatGeobufFeatures(t *testing.T) {
	formattest.RequireTool(t, "ogr2ogr")
	bin := diffBinary(t, "")
	mk := buildTool(t, "../../scripts/mkdemo")
	r := newRunner(t)
	csv := filepath.Join(t.TempDir(), "p.csv")
	fgb := func(edit ...string) {
		runTool(t, mk, append([]string{"points", "-o", csv, "-n", "20000"}, edit...)...)
		formattest.Run1(t, "ogr2ogr", "-f", "FlatGeobuf", "-lco", "SPATIAL_INDEX=YES", "-oo", "X_POSSIBLE_NAMES=lon", "-oo", "Y_POSSIBLE_NAMES=lat",
			"-oo", "KEEP_GEOM_COLUMNS=NO", "-a_srs", "EPSG:4326", "-nln", "stations", r.path("stations.fgb"), csv)
	}
	fgb()
	r.cv("init")
	r.cv("track", "*.fgb")
	r.cv("commit", "-m", "v1")
	fgb("-edit-box", "9000,49000,10000,50000")
	d := r.diffJSON(bin)
	if len(d.Files) != 1 {
		t.Fatalf("%d files", len(d.Files))
	}
	f := d.Files[0]
	fg := f.FlatGeobuf
	if fg == nil || !fg.Compared || fg.FeaturesAdded == 0 || fg.FeaturesAdded != fg.FeaturesRemoved || fg.FeaturesOld != 20000 || fg.FeaturesNew != 20000 || fg.HeaderChanged {
		t.Fatalf("flatgeobuf %+v", fg)
	}
	t.Logf("features +%d -%d in %d changed blocks; bbox %v", fg.FeaturesAdded, fg.FeaturesRemoved, fg.BlocksChanged, *f.BBox)
	if b := f.BBox; b[0] < 9 || b[1] < 49 || b[2] > 10 || b[3] > 50 {
		t.Fatalf("changed area %v is not inside the edited box", *b)
	}
	if gj := r.dv(bin, 0, "diff", "--format", "geojson"); !strings.Contains(gj, `"FeatureCollection"`) || strings.Contains(gj, `"crs"`) {
		t.Fatalf("geojson:\n%s", gj)
	}
}
