//go:build gdal

package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
)

type normalizeReport struct {
	Files []normalizeResult `json:"files"`
}

// normalizeJSON runs the GDAL-enabled binary with --json and decodes its
// report whatever the exit code.
func normalizeJSON(t *testing.T, r *runner, bin string, args ...string) (normalizeResult, result) {
	t.Helper()
	res := r.run(bin, append([]string{"normalize", "--json"}, args...)...)
	var rep normalizeReport
	if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil || len(rep.Files) != 1 {
		t.Fatalf("normalize %v: exit %d, bad JSON (%v)\nstdout: %s\nstderr: %s", args, res.code, err, res.stdout, res.stderr)
	}
	return rep.Files[0], res
}

// The command end to end, built with -tags gdal, in a real repository: a
// committed 2048×2048×3 COG is edited in place with gdalwarp (stale
// overviews, dead bytes); normalize keeps the 60 untouched tiles' bytes,
// refuses profiles that would churn them, and --force overrides.
func TestNormalizeCommand(t *testing.T) {
	for _, tool := range []string{"gdal_translate", "gdal_create", "gdalwarp"} {
		formattest.RequireTool(t, tool)
	}
	bin := filepath.Join(t.TempDir(), "chunkvc-gdal")
	if out, err := exec.Command("go", "build", "-tags", "gdal", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -tags gdal: %v\n%s", err, out)
	}
	mk := mkdemo(t)
	r := newRunner(t)
	gen := t.TempDir()
	raw := filepath.Join(gen, "dem.bin")
	if out, err := exec.Command(mk, "raster", "-o", raw, "-size", "2048", "-bands", "3").CombinedOutput(); err != nil {
		t.Fatalf("mkdemo: %v %s", err, out)
	}
	// 40960 m / 2048 px = 20 m pixels.
	formattest.Run1(t, "gdal_translate", append(cogOpts, raw, r.path("dem.tif"))...)
	r.cv("init")
	r.cv("track", "*.tif")
	r.cv("commit", "-m", "v1")

	t.Run("without GDAL", func(t *testing.T) {
		res := r.run(binary, "normalize", "dem.tif")
		if res.code != exitFailure || !strings.Contains(res.stderr, "built without GDAL and no chunkvc-gdal is installed") {
			t.Fatalf("exit %d, stderr %q", res.code, res.stderr)
		}
	})

	// Burn a 20×12 px patch at pixel (500, 250), across the corner of
	// tiles r0/r1 × c1/c2, into the committed COG in place.
	patch := filepath.Join(gen, "patch.tif")
	formattest.Run1(t, "gdal_create", "-q", "-of", "GTiff", "-outsize", "20", "12", "-bands", "3", "-ot", "UInt16",
		"-burn", "3000", "-a_srs", "EPSG:32633", "-a_ullr", "510000", "4635960", "510400", "4635720", patch)
	formattest.Run1(t, "gdalwarp", "-q", patch, r.path("dem.tif"))
	edited := r.read("dem.tif")
	want := filepath.Join(gen, "want.tif")
	formattest.Run1(t, "gdal_translate", "-q", "-of", "COG", "-co", "COMPRESS=DEFLATE", "-co", "PREDICTOR=2",
		"-co", "BLOCKSIZE=256", "-co", "OVERVIEWS=IGNORE_EXISTING", r.path("dem.tif"), want)
	wantTiles := []string{"z0/r0/c1", "z0/r0/c2", "z0/r1/c1", "z0/r1/c2"}

	t.Run("check-only", func(t *testing.T) {
		f, res := normalizeJSON(t, r, bin, "--check-only", "dem.tif")
		if res.code != 0 || f.Status != "checked" || !f.InHead || f.Tiles != 64 || f.ChurnedTiles != 0 ||
			strings.Join(f.Changed, " ") != strings.Join(wantTiles, " ") {
			t.Fatalf("exit %d, %+v\n%s", res.code, f, res.stderr)
		}
		if !bytes.Equal(r.read("dem.tif"), edited) {
			t.Fatal("--check-only changed the file")
		}
	})

	t.Run("refuses churn", func(t *testing.T) {
		for _, tc := range []struct {
			profile, pin string
			churned      int
		}{
			{"COMPRESS=DEFLATE,PREDICTOR=2,BLOCKSIZE=256,LEVEL=1",
				"(z0/r0/c0, z0/r0/c3, z0/r0/c4, z0/r0/c5, z0/r0/c6, z0/r0/c7, z0/r1/c0, z0/r1/c3 and 52 more); pin the compression LEVEL", 60},
			{"COMPRESS=ZSTD", "pin COMPRESS=DEFLATE (HEAD has deflate", 60},     // PREDICTOR, BLOCKSIZE from HEAD
			{"COMPRESS=DEFLATE,PREDICTOR=2,BLOCKSIZE=512", "BLOCKSIZE=256", 16}, // counted on the new grid
		} {
			f, res := normalizeJSON(t, r, bin, "--profile", tc.profile, "dem.tif")
			t.Logf("%s: %d tiles, %d changed, %d churned", tc.profile, f.Tiles, f.ChangedTiles, f.ChurnedTiles)
			if res.code == 0 || f.Status != "refused" || f.ChurnedTiles != tc.churned ||
				!strings.Contains(res.stderr, tc.pin) || !strings.Contains(res.stderr, "--force") {
				t.Fatalf("%s: exit %d, %+v\nstderr: %s", tc.profile, res.code, f, res.stderr)
			}
			if !bytes.Equal(r.read("dem.tif"), edited) {
				t.Fatalf("%s: refused, but the file changed", tc.profile)
			}
		}
	})

	t.Run("normalize", func(t *testing.T) {
		f, res := normalizeJSON(t, r, bin, "dem.tif")
		t.Logf("normalize: %+v", f)
		if res.code != 0 || f.Status != "normalized" || f.Tiles != 64 || f.ChangedTiles != 4 || f.ChurnedTiles != 0 ||
			f.BytesBefore != int64(len(edited)) || f.Profile != "COMPRESS=DEFLATE,PREDICTOR=2,BLOCKSIZE=256" {
			t.Fatalf("exit %d, %+v\n%s", res.code, f, res.stderr)
		}
		got := r.read("dem.tif")
		if w := readFile(t, want); !bytes.Equal(got, w) || f.BytesAfter != int64(len(w)) {
			t.Fatalf("normalized file (%d bytes) differs from gdal_translate -of COG (%d bytes)", len(got), len(w))
		}
		if f, res := normalizeJSON(t, r, bin, "dem.tif"); res.code != 0 || f.Status != "unchanged" {
			t.Fatalf("second run: exit %d, %+v", res.code, f)
		}
		var cr commitResult
		r.jsonOf(&cr, "commit", "-m", "v2")
		t.Logf("commit after normalize: %d chunks, %d new (%d bytes)", cr.Files[0].Chunks, cr.Files[0].NewChunks, cr.Files[0].NewBytes)
		// 4 full-resolution tiles + the overview tiles above them (2+1+1).
		if cr.Files[0].Chunks != 85 || cr.Files[0].NewChunks > 8 {
			t.Fatalf("commit: %+v", cr.Files[0])
		}
	})

	t.Run("force", func(t *testing.T) {
		f, res := normalizeJSON(t, r, bin, "--force", "--profile", "COMPRESS=ZSTD,PREDICTOR=2,BLOCKSIZE=256", "dem.tif")
		if res.code != 0 || f.Status != "normalized" || f.ChurnedTiles != 64 || f.ChangedTiles != 0 {
			t.Fatalf("exit %d, %+v\n%s", res.code, f, res.stderr)
		}
	})

	t.Run("new file and errors", func(t *testing.T) {
		r.write("new.tif", edited)
		f, res := normalizeJSON(t, r, bin, "new.tif")
		if res.code != 0 || f.Status != "normalized" || f.InHead || f.Tiles != 64 {
			t.Fatalf("exit %d, %+v\n%s", res.code, f, res.stderr)
		}
		r.write("notes.txt", []byte("hello"))
		if res := r.run(bin, "normalize", "notes.txt"); res.code != exitUsage {
			t.Fatalf("untracked file: exit %d, %s", res.code, res.stderr)
		}
		if res := r.run(bin, "normalize", "--profile", "OVERVIEWS=AUTO", "new.tif"); res.code != exitUsage || !strings.Contains(res.stderr, "stale") {
			t.Fatalf("OVERVIEWS=AUTO: exit %d, %s", res.code, res.stderr)
		}
	})
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	r := &runner{t: t, dir: filepath.Dir(p)}
	return r.read(filepath.Base(p))
}
