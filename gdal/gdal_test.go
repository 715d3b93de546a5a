//go:build gdal

package gdal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/airbusgeo/godal"

	"github.com/chunkvc/chunkvc/formats/formattest"
	"github.com/chunkvc/chunkvc/formats/tiff"
)

// The fixture: a 2048×2048×3 UInt16 COG (DEFLATE, predictor 2, 256 px
// tiles, 3 overview levels: 64 + 16 + 4 + 1 = 85 tiles), made by
// gdal_translate from scripts/mkdemo terrain, and the same made from data
// with the window below raised by 250. The window crosses the corner of
// four full-resolution tiles.
const size = 2048

var (
	window   = [4]int{500, 250, 20, 12} // x, y, w, h
	winTiles = []Tile{{0, 1}, {0, 2}, {1, 1}, {1, 2}}
	profile  = []string{"COMPRESS=DEFLATE", "PREDICTOR=2", "BLOCKSIZE=256"}
)

type fixture struct {
	orig string // COG of the unedited data
	ref  string // COG built from the edited data with the same options
}

var (
	fixOnce sync.Once
	fix     fixture
	fixErr  error
	fixDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if fixDir != "" {
		os.RemoveAll(fixDir)
	}
	os.Exit(code)
}

// fixtures builds the two COGs once per test binary.
func fixtures(t *testing.T) fixture {
	t.Helper()
	formattest.RequireTool(t, "gdal_translate")
	fixOnce.Do(func() { fix, fixErr = buildFixtures() })
	if fixErr != nil {
		t.Fatal(fixErr)
	}
	return fix
}

func buildFixtures() (fixture, error) {
	var err error
	if fixDir, err = os.MkdirTemp("", "chunkvc-gdal-"); err != nil {
		return fixture{}, err
	}
	mk := filepath.Join(fixDir, "mkdemo")
	if out, err := exec.Command("go", "build", "-o", mk, "../scripts/mkdemo").CombinedOutput(); err != nil {
		return fixture{}, fmt.Errorf("build mkdemo: %v\n%s", err, out)
	}
	f := fixture{orig: filepath.Join(fixDir, "orig.tif"), ref: filepath.Join(fixDir, "ref.tif")}
	edit := fmt.Sprintf("%d,%d,%d,%d", window[0], window[1], window[2], window[3])
	for _, v := range []struct{ out, edit string }{{f.orig, ""}, {f.ref, edit}} {
		raw := filepath.Join(fixDir, "dem.bin")
		args := []string{"raster", "-o", raw, "-size", fmt.Sprint(size), "-bands", "3"}
		if v.edit != "" {
			args = append(args, "-edit", v.edit)
		}
		if out, err := exec.Command(mk, args...).CombinedOutput(); err != nil {
			return fixture{}, fmt.Errorf("mkdemo: %v\n%s", err, out)
		}
		args = []string{"-q", "-of", "COG", "-a_srs", "EPSG:32633", "-a_ullr", "500000", "4640960", "540960", "4600000"}
		for _, p := range profile {
			args = append(args, "-co", p)
		}
		if out, err := exec.Command("gdal_translate", append(args, raw, v.out)...).CombinedOutput(); err != nil {
			return fixture{}, fmt.Errorf("gdal_translate: %v\n%s", err, out)
		}
	}
	return f, nil
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// editInPlace raises the window by 250 in every band, writing into the
// file with GDAL in update mode — as a user's tool would. GDAL re-encodes
// the touched tiles only and leaves the overviews stale.
func editInPlace(t *testing.T, path string) {
	t.Helper()
	register()
	var w warnings
	ds, err := godal.Open(path, godal.Update(), godal.ErrLogger(w.handler))
	if err != nil {
		t.Fatal(err)
	}
	x, y, ww, hh := window[0], window[1], window[2], window[3]
	buf := make([]uint16, ww*hh)
	for _, b := range ds.Bands() {
		if err := b.Read(x, y, buf, ww, hh); err != nil {
			t.Fatal(err)
		}
		for i := range buf {
			buf[i] += 250
		}
		if err := b.Write(x, y, buf, ww, hh); err != nil {
			t.Fatal(err)
		}
	}
	if err := ds.Close(godal.ErrLogger(w.handler)); err != nil {
		t.Fatal(err)
	}
}

// overviewWindow reads band 1 of overview level 1 over the edited window.
func overviewWindow(t *testing.T, path string) []uint16 {
	t.Helper()
	ds, err := open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	ovr := ds.Bands()[0].Overviews()
	if len(ovr) != 3 {
		t.Fatalf("%s: %d overviews, want 3", path, len(ovr))
	}
	x, y, w, h := window[0]/2, window[1]/2, window[2]/2, window[3]/2
	buf := make([]uint16, w*h)
	if err := ovr[0].Read(x, y, buf, w, h); err != nil {
		t.Fatal(err)
	}
	return buf
}

// chunkHashes maps each tiff-adapter chunk key to its bytes' digest, read
// by the pure-Go adapter (an independent check on GDAL's block metadata).
func chunkHashes(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	l, err := tiff.Adapter{}.Layout(context.Background(), bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, s := range l.Segments {
		if s.IsChunk() {
			out[s.Key] = string(data[s.Off : s.Off+s.Len])
		}
	}
	if tiff.Profile(l) == "" {
		t.Fatalf("%s: not a tiff layout", path)
	}
	return out
}

func tileNames(ts []Tile) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = t.String()
	}
	return strings.Join(s, " ")
}

// An in-place edit, then Normalize: the untouched full-resolution tiles
// keep the original COG's bytes, the changed tiles are exactly those under
// the window, the overviews are rebuilt, and the result equals the COG
// gdal_translate makes from the edited data.
func TestNormalizeKeepsUnchangedTiles(t *testing.T) {
	f := fixtures(t)
	dir := t.TempDir()
	edited := filepath.Join(dir, "edited.tif")
	copyFile(t, f.orig, edited)
	editInPlace(t, edited)
	if !slices.Equal(overviewWindow(t, edited), overviewWindow(t, f.orig)) {
		t.Fatal("the in-place edit updated the overviews; the stale-overview case is not exercised")
	}

	norm := filepath.Join(dir, "norm.tif")
	if err := Normalize(edited, norm, profile); err != nil {
		t.Fatal(err)
	}
	c, err := TileChurn(f.orig, norm)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("orig → normalized: %d tiles, %d same, %d changed (%s), %d churned", c.Tiles, c.Same, len(c.Changed), tileNames(c.Changed), len(c.Churned))
	if c.Tiles != 64 || c.Same != 60 || !slices.Equal(c.Changed, winTiles) || len(c.Churned) != 0 {
		t.Fatalf("churn %+v, want 64 tiles, changed %s, none churned", c, tileNames(winTiles))
	}

	// Independent check with the pure-Go adapter: every chunk key, z0 and
	// overviews, compared by bytes.
	ho, hn := chunkHashes(t, f.orig), chunkHashes(t, norm)
	if len(ho) != 85 || len(hn) != 85 {
		t.Fatalf("%d and %d chunks, want 85", len(ho), len(hn))
	}
	var changed []string
	for k, v := range ho {
		if hn[k] != v {
			changed = append(changed, k)
		}
	}
	slices.Sort(changed)
	var z0 []string
	for _, k := range changed {
		if strings.HasPrefix(k, "z0/") {
			z0 = append(z0, k)
		}
	}
	t.Logf("changed chunks (tiff adapter): %d of 85: %s", len(changed), strings.Join(changed, " "))
	if strings.Join(z0, " ") != tileNames(winTiles) {
		t.Fatalf("changed z0 chunks %v, want %s", z0, tileNames(winTiles))
	}
	if len(changed) == len(z0) {
		t.Fatal("no overview tile changed: overviews are stale")
	}
	if slices.Equal(overviewWindow(t, norm), overviewWindow(t, f.orig)) {
		t.Fatal("normalized overview still shows the unedited pixels")
	}

	nb, _ := os.ReadFile(norm)
	rb, _ := os.ReadFile(f.ref)
	if !bytes.Equal(nb, rb) {
		t.Fatalf("normalized file (%d bytes) differs from gdal_translate -of COG of the edited data (%d bytes)", len(nb), len(rb))
	}
	again := filepath.Join(dir, "again.tif")
	if err := Normalize(edited, again, profile); err != nil {
		t.Fatal(err)
	}
	if ab, _ := os.ReadFile(again); !bytes.Equal(ab, nb) {
		t.Fatal("Normalize is not deterministic")
	}
}

// Re-encoding with another codec keeps every pixel but changes every
// tile's bytes: TileChurn reports all of them as churn.
func TestTileChurnDetectsReencode(t *testing.T) {
	f := fixtures(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		profile []string
		churned int // -1: some but not necessarily all
	}{
		{"same", profile, 0},
		{"zstd", []string{"COMPRESS=ZSTD", "PREDICTOR=2", "BLOCKSIZE=256"}, 64},
		{"deflate-level1", []string{"COMPRESS=DEFLATE", "PREDICTOR=2", "BLOCKSIZE=256", "LEVEL=1"}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, tc.name+".tif")
			if err := Normalize(f.orig, out, tc.profile); err != nil {
				t.Fatal(err)
			}
			c, err := TileChurn(f.orig, out)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %d tiles, %d same, %d changed, %d churned", tc.name, c.Tiles, c.Same, len(c.Changed), len(c.Churned))
			if len(c.Changed) != 0 || c.Same+len(c.Churned) != c.Tiles || c.Tiles != 64 {
				t.Fatalf("churn %+v: pixels changed or tiles miscounted", c)
			}
			if tc.churned >= 0 && len(c.Churned) != tc.churned || tc.churned < 0 && len(c.Churned) == 0 {
				t.Fatalf("%d churned, want %d", len(c.Churned), tc.churned)
			}
		})
	}
}

func TestTileChurnGridMismatch(t *testing.T) {
	f := fixtures(t)
	out := filepath.Join(t.TempDir(), "512.tif")
	if err := Normalize(f.orig, out, []string{"COMPRESS=DEFLATE", "BLOCKSIZE=512"}); err != nil {
		t.Fatal(err)
	}
	if _, err := TileChurn(f.orig, out); !errors.Is(err, ErrGridMismatch) {
		t.Fatalf("err %v, want ErrGridMismatch", err)
	}
	g, err := Inspect(out)
	if err != nil {
		t.Fatal(err)
	}
	if g.Tiles() != 16 || g.TileWidth != 512 || g.Bands != 3 || g.DataType != "UInt16" {
		t.Fatalf("grid %v", g)
	}
}

func TestNormalizeBadProfile(t *testing.T) {
	f := fixtures(t)
	dir := t.TempDir()
	for _, p := range [][]string{
		{"COMPRESS"},
		{"COMPRESS=DEFLATE", "NO_SUCH_OPTION=1"},
		{"COMPRESS=NOT_A_CODEC"},
		{"OVERVIEWS=AUTO"},
	} {
		out := filepath.Join(dir, "bad.tif")
		err := Normalize(f.orig, out, p)
		if !errors.Is(err, ErrProfile) {
			t.Errorf("profile %v: err %v, want ErrProfile", p, err)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("profile %v: output left behind", p)
		}
	}
	if err := Normalize(f.orig, f.orig, profile); err == nil {
		t.Error("normalizing a file onto itself succeeded")
	}
}
