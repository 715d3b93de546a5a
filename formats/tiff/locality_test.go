package tiff

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/formats/formattest"
	"github.com/chunkvc/chunkvc/geom"
	"github.com/chunkvc/chunkvc/hashing"
)

// TestLocality is issue 3's headline: a 4096×4096×3 UInt16 COG (256 px
// DEFLATE tiles, predictor 2, overviews), a 96×96 window edited in the
// source, the COG rebuilt with the same options. What a commit adds must
// stay within 1.25 × (changed tiles + skeleton), every chunk has a bbox,
// and the changed full-resolution tiles cover the edited window.
func TestLocality(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two 100 MB COGs")
	}
	dir := t.TempDir()
	cog := []string{"-of", "COG", "-co", "BLOCKSIZE=256", "-co", "COMPRESS=DEFLATE", "-co", "PREDICTOR=YES", "-co", "NUM_THREADS=2", "-co", "LEVEL=1"}
	start := time.Now()
	src := raster{w: 4096, h: 4096, bands: 3}
	before := translate(t, src.write(t, dir, "a"), filepath.Join(dir, "a.tif"), cog...)
	// A 96×96 window that straddles no tile edge: x 1100..1196, y 2200..2296
	// lies inside tile r8/c4 (256 px tiles).
	win := [4]int{1100, 2200, 1196, 2296}
	src.edit = win
	after := translate(t, src.write(t, dir, "b"), filepath.Join(dir, "b.tif"), cog...)
	t.Logf("two COGs (%d and %d bytes) built in %v", len(before), len(after), time.Since(start))

	lb, la := layoutOf(t, before), layoutOf(t, after)
	gi := info(t, filepath.Join(dir, "a.tif"))
	want := tileCount(gi.Size[0], gi.Size[1], 256)
	for _, o := range gi.Bands[0].Overviews {
		want += tileCount(o.Size[0], o.Size[1], 256)
	}
	if got := len(la.Chunks()); got != want {
		t.Errorf("%d chunks, GDAL's structure implies %d tiles", got, want)
	}
	if field(la, "cog") != "yes" || field(la, "overviews") != itoa(len(gi.Bands[0].Overviews)) {
		t.Errorf("summary %v", la.Summary)
	}

	old := map[string]hashing.ID{}
	for _, s := range lb.Chunks() {
		old[s.Key] = hashing.Sum(before[s.Off : s.Off+s.Len])
	}
	var changed []string
	var changedBytes int64
	wx0, wy0 := originX+pixel*float64(win[0]), originY-pixel*float64(win[3])
	wx1, wy1 := originX+pixel*float64(win[2]), originY-pixel*float64(win[1])
	for _, s := range la.Chunks() {
		if s.BBox == nil {
			t.Fatalf("chunk %s has no bbox", s.Key)
		}
		if old[s.Key] == hashing.Sum(after[s.Off:s.Off+s.Len]) {
			continue
		}
		changed = append(changed, s.Key)
		changedBytes += s.Len
		b := *s.BBox
		if strings.HasPrefix(s.Key, "z0/") && !(b.MinX <= wx0 && b.MinY <= wy0 && b.MaxX >= wx1 && b.MaxY >= wy1) {
			t.Errorf("changed tile %s bbox %v does not contain the edited window %v", s.Key, b, geom.BBox{MinX: wx0, MinY: wy0, MaxX: wx1, MaxY: wy1})
		}
	}
	levels := len(gi.Bands[0].Overviews) + 1
	if len(changed) < 1 || len(changed) > 2*levels {
		t.Errorf("%d tiles changed (%v), want about one per level (%d levels)", len(changed), changed, levels)
	}
	if !contains(changed, "z0/r8/c4") {
		t.Errorf("the edited tile z0/r8/c4 is not among the changed %v", changed)
	}
	added := formattest.ChangedBytes(t, Adapter{}, before, after)
	limit := int64(math.Ceil(1.25 * float64(changedBytes+la.InlineBytes())))
	t.Logf("%d chunks, %d changed %v: %d tile bytes + %d inline; commit adds %d bytes (limit %d) of a %d-byte file",
		len(la.Chunks()), len(changed), changed, changedBytes, la.InlineBytes(), added, limit, len(after))
	if added > limit {
		t.Errorf("commit adds %d bytes, over 1.25 × (changed tiles + skeleton) = %d", added, limit)
	}
}

func tileCount(w, h, b int) int { return ((w + b - 1) / b) * ((h + b - 1) / b) }

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}
