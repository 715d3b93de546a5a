package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
)

// mkdemo builds scripts/mkdemo once per test.
func mkdemo(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "mkdemo")
	if out, err := exec.Command("go", "build", "-o", p, "../../scripts/mkdemo").CombinedOutput(); err != nil {
		t.Fatalf("build mkdemo: %v\n%s", err, out)
	}
	return p
}

var cogOpts = []string{"-q", "-of", "COG", "-co", "COMPRESS=DEFLATE", "-co", "PREDICTOR=2", "-co", "BLOCKSIZE=256",
	"-a_srs", "EPSG:32633", "-a_ullr", "500000", "4640960", "540960", "4600000"}

type lsChunks struct {
	Format  string            `json:"format"`
	Size    int64             `json:"size"`
	Summary map[string]string `json:"summary"`
	Chunks  []struct {
		Key  string      `json:"key"`
		Size int64       `json:"size"`
		Hash string      `json:"hash"`
		BBox *[4]float64 `json:"bbox"`
	} `json:"chunks"`
}

// Issue 3's headline: a 96×96 edit in a 4096×4096×3 UInt16 COG costs the
// changed tiles plus the skeleton; every tile is listed with a footprint;
// the first version checks out byte for byte and GDAL reads it.
func TestCOGEditCostsTiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two 4096² COGs")
	}
	formattest.RequireTool(t, "gdal_translate")
	mk := mkdemo(t)
	r := newRunner(t)
	gen := t.TempDir()
	raw := filepath.Join(gen, "dem.bin")
	build := func(edit ...string) {
		args := append([]string{"raster", "-o", raw, "-size", "4096", "-bands", "3"}, edit...)
		if out, err := exec.Command(mk, args...).CombinedOutput(); err != nil {
			t.Fatalf("mkdemo: %v %s", err, out)
		}
		formattest.Run1(t, "gdal_translate", append(cogOpts, raw, r.path("dem.tif"))...)
	}
	build()
	v1 := r.read("dem.tif")
	r.cv("init")
	r.cv("track", "*.tif")
	r.cv("commit", "-m", "v1")
	var l1 lsChunks
	r.jsonOf(&l1, "ls-chunks", "dem.tif")
	if l1.Format != "tiff" || l1.Summary["cog"] != "yes" {
		t.Fatalf("format %s, summary %v", l1.Format, l1.Summary)
	}
	z0 := 0
	for _, c := range l1.Chunks {
		if c.BBox == nil {
			t.Fatalf("chunk %s has no bbox", c.Key)
		}
		if strings.HasPrefix(c.Key, "z0/") {
			z0++
		}
	}
	if z0 != 16*16 {
		t.Fatalf("%d full-resolution tiles listed, want 256", z0)
	}

	build("-edit", "1900,1900,96,96")
	var res commitResult
	r.jsonOf(&res, "commit", "-m", "v2")
	var l2 lsChunks
	r.jsonOf(&l2, "ls-chunks", "dem.tif")
	old := map[string]bool{}
	for _, c := range l1.Chunks {
		old[c.Hash] = true
	}
	var changed, chunkBytes int64
	var changedKeys []string
	for _, c := range l2.Chunks {
		chunkBytes += c.Size
		if !old[c.Hash] {
			changed += c.Size
			changedKeys = append(changedKeys, c.Key)
		}
	}
	skeleton := l2.Size - chunkBytes
	limit := (changed + skeleton) * 5 / 4
	t.Logf("changed tiles %v: %d bytes; skeleton %d; uploaded %d (limit %d) of a %d-byte file", changedKeys, changed, skeleton, res.BytesUploaded, limit, l2.Size)
	if len(changedKeys) == 0 || len(changedKeys) > 12 || res.BytesUploaded > limit {
		t.Fatalf("edit uploaded %d bytes for %d changed tiles (limit %d)", res.BytesUploaded, len(changedKeys), limit)
	}
	// The edited window (pixels 1900..1996) lies in z0 tile r7/c7 (256 px tiles, 10 m pixels).
	wantBox := [4]float64{500000 + 1900*10, 4640960 - 1996*10, 500000 + 1996*10, 4640960 - 1900*10}
	found := false
	for _, c := range l2.Chunks {
		if c.Key == "z0/r7/c7" {
			b := c.BBox
			found = b[0] <= wantBox[0] && b[1] <= wantBox[1] && b[2] >= wantBox[2] && b[3] >= wantBox[3] && !old[c.Hash]
		}
	}
	if !found {
		t.Fatal("tile z0/r7/c7 did not change or its bbox does not contain the edited window")
	}

	r.cv("checkout", "HEAD~1", "--", "dem.tif")
	if !bytes.Equal(r.read("dem.tif"), v1) {
		t.Fatal("checkout of v1 is not byte-identical")
	}
	if out := formattest.Run1(t, "gdalinfo", "-checksum", r.path("dem.tif")); !strings.Contains(out, "Checksum=") {
		t.Fatalf("gdalinfo cannot read the checkout:\n%s", out)
	}
}

// Re-encoding with other settings and editing without rebuilding overviews
// are both warned about at commit.
func TestCOGCommitWarnings(t *testing.T) {
	formattest.RequireTool(t, "gdal_translate")
	formattest.RequireTool(t, "gdalwarp")
	mk := mkdemo(t)
	r := newRunner(t)
	gen := t.TempDir()
	raw := filepath.Join(gen, "dem.bin")
	if out, err := exec.Command(mk, "raster", "-o", raw, "-size", "1024").CombinedOutput(); err != nil {
		t.Fatalf("mkdemo: %v %s", err, out)
	}
	opts := []string{"-q", "-of", "COG", "-co", "BLOCKSIZE=256", "-a_srs", "EPSG:32633", "-a_ullr", "500000", "4610240", "510240", "4600000"}
	formattest.Run1(t, "gdal_translate", append(append(opts, "-co", "COMPRESS=DEFLATE"), raw, r.path("dem.tif"))...)
	r.cv("init")
	r.cv("track", "*.tif")
	r.cv("commit", "-m", "deflate")

	formattest.Run1(t, "gdal_translate", append(append(opts, "-co", "COMPRESS=ZSTD"), raw, r.path("dem.tif"))...)
	res := r.run(binary, "commit", "-m", "zstd")
	if res.code != 0 || !strings.Contains(res.stderr, "re-encoded") || !strings.Contains(res.stderr, "deflate → zstd") {
		t.Fatalf("re-encode not warned: exit %d\n%s", res.code, res.stderr)
	}

	// Paint a patch into the full resolution only, then rebuild the COG
	// reusing the (now stale) overviews.
	work := filepath.Join(gen, "work.tif")
	patchRaw := filepath.Join(gen, "patch.bin")
	if out, err := exec.Command(mk, "raster", "-o", patchRaw, "-size", "1024", "-edit", "0,0,1024,1024").CombinedOutput(); err != nil {
		t.Fatalf("mkdemo: %v %s", err, out)
	}
	patch := filepath.Join(gen, "patch.tif")
	formattest.Run1(t, "gdal_translate", "-q", "-srcwin", "300", "300", "40", "40", "-a_srs", "EPSG:32633", "-a_ullr", "503000", "4607240", "503400", "4606840", patchRaw, patch)
	if err := os.WriteFile(work, r.read("dem.tif"), 0o644); err != nil {
		t.Fatal(err)
	}
	formattest.Run1(t, "gdalwarp", "-q", "--config", "GTIFF_DONT_WRITE_BLOCKS", "NO", patch, work)
	formattest.Run1(t, "gdal_translate", append([]string{"-q", "-of", "COG", "-co", "BLOCKSIZE=256", "-co", "COMPRESS=ZSTD"}, work, r.path("dem.tif"))...)
	res = r.run(binary, "commit", "-m", "stale")
	if res.code != 0 || !strings.Contains(res.stderr, "stale overviews") {
		t.Fatalf("stale overviews not warned: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
}
