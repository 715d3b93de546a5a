package flatgeobuf

import (
	"bytes"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
	"github.com/chunkvc/chunkvc/geom"
	"github.com/chunkvc/chunkvc/hashing"
)

// GDAL's writer orders the records of an indexed file along the Hilbert
// curve: HilbertSort, given them shuffled, puts them back in GDAL's order
// (the points are random, so no two share a cell and the order is one).
func TestHilbertSortIsGDALs(t *testing.T) {
	for _, n := range []int{1, 17, 3000} {
		_, data := pointsFGB(t, t.TempDir(), "p", randomPoints(n, int64(n)), true)
		f := parseBytes(t, data)
		got := slices.Clone(f.feats)
		rand.New(rand.NewSource(1)).Shuffle(len(got), func(i, j int) { got[i], got[j] = got[j], got[i] })
		HilbertSort(got)
		for i := range got {
			if got[i].ID != f.feats[i].ID {
				t.Fatalf("%d points: record %d after HilbertSort is GDAL's record at %d", n, i, slices.IndexFunc(f.feats, func(x Feature) bool { return x.ID == got[i].ID }))
			}
		}
	}
}

// hilbertXY walks the whole curve: every cell of a small corner once,
// each step to a neighbouring cell (a rotation bug breaks adjacency).
func TestHilbertCurveAdjacent(t *testing.T) {
	const side = 64 // a corner whose cells come first along the curve
	at := map[uint32][2]uint32{}
	for x := range uint32(side) {
		for y := range uint32(side) {
			at[hilbertXY(x, y)] = [2]uint32{x, y}
		}
	}
	for d := uint32(0); d < side*side; d++ {
		p, ok := at[d]
		if !ok {
			t.Fatalf("index %d is outside the %d² corner", d, side)
		}
		if d > 0 {
			q := at[d-1]
			if dist := absDiff(p[0], q[0]) + absDiff(p[1], q[1]); dist != 1 {
				t.Fatalf("indexes %d and %d are %d cells apart", d-1, d, dist)
			}
		}
	}
	if hilbertXY(hilbertMax, 0) != 1<<32-1 {
		t.Fatalf("the curve ends at %d, not at (max, 0)", hilbertXY(hilbertMax, 0))
	}
}

func absDiff(a, b uint32) uint32 {
	if a > b {
		return a - b
	}
	return b - a
}

// PatchHeader changes features_count and the envelope and no other byte;
// the header reads back with them. Random values, in a GDAL header.
func TestPatchHeader(t *testing.T) {
	_, data := pointsFGB(t, t.TempDir(), "p", randomPoints(50, 3), true)
	f := parseBytes(t, data)
	h := data[magicLen+4 : f.indexOff]
	rng := rand.New(rand.NewSource(9))
	for range 100 {
		n := rng.Uint64() >> 8
		env := geom.BBox{MinX: rng.NormFloat64(), MinY: rng.NormFloat64(), MaxX: rng.NormFloat64() + 5, MaxY: rng.NormFloat64() + 5}
		got, err := PatchHeader(h, n, env)
		if err != nil {
			t.Fatal(err)
		}
		ph, err := parseHeader(got)
		if err != nil {
			t.Fatal(err)
		}
		if a := env.Array(); ph.count != n || !slices.Equal(ph.envelope, a[:]) {
			t.Fatalf("patched header reads count %d envelope %v, want %d %v", ph.count, ph.envelope, n, env)
		}
		diff := 0
		for i := range got {
			if got[i] != h[i] {
				diff++
			}
		}
		if diff > 40 {
			t.Fatalf("patch changed %d bytes, more than count and envelope hold", diff)
		}
	}
	if _, err := PatchHeader(h[:10], 1, geom.BBox{}); err == nil {
		t.Fatal("a truncated header patched")
	}
}

// mergeFiles plans and writes the merge of three FlatGeobuf files keyed
// by key, checks it and returns the merged bytes (or the conflicts).
func mergeFiles(t *testing.T, key string, base, ours, theirs []byte) ([]byte, *MergePlan, []MergeConflict) {
	t.Helper()
	return mergeTaking(t, MergeOptions{Key: key}, base, ours, theirs)
}

// mergeTaking is mergeFiles with options.
func mergeTaking(t *testing.T, opt MergeOptions, base, ours, theirs []byte) ([]byte, *MergePlan, []MergeConflict) {
	t.Helper()
	side := func(b []byte) MergeSide { return MergeSide{R: bytes.NewReader(b), Size: int64(len(b))} }
	p, cs, err := PlanMerge(t.Context(), side(base), side(ours), side(theirs), opt)
	if err != nil || len(cs) > 0 {
		if err != nil {
			t.Fatal(err)
		}
		return nil, nil, cs
	}
	out, err := os.Create(filepath.Join(t.TempDir(), "merged.fgb"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	n, err := p.WriteTo(t.Context(), out, side(ours), side(theirs))
	if err != nil {
		t.Fatal(err)
	}
	merged := make([]byte, n)
	if _, err := out.ReadAt(merged, 0); err != nil {
		t.Fatal(err)
	}
	if err := p.Check(t.Context(), bytes.NewReader(merged), n); err != nil {
		t.Fatal(err)
	}
	return merged, p, nil
}

// Two sides' edits of a GDAL-written file merged by the "id" column
// make, byte for byte, the file GDAL writes for the merged points: our
// changed value and deleted point, their moved and added points. The
// index is derived and ogrinfo counts the features. By content (no
// key) the same merge holds the same features.
func TestPlanMergeIsGDALsFile(t *testing.T) {
	dir := t.TempDir()
	pts := randomPoints(2000, 5)
	ours, theirs := slices.Clone(pts), slices.Clone(pts)
	ours[5].v = 123.5
	ours = slices.Delete(ours, 10, 11)
	theirs[20].x, theirs[20].y = 1.5, 999.25
	theirs = append(theirs, point{id: 5000, name: "new", v: 1, x: 2000, y: -10})
	want := append(slices.Clone(ours), theirs[len(theirs)-1])
	want[19].x, want[19].y = 1.5, 999.25 // the point with id 20, one place up
	_, b := pointsFGB(t, dir, "base", pts, true)
	_, o := pointsFGB(t, dir, "ours", ours, true)
	_, th := pointsFGB(t, dir, "theirs", theirs, true)
	_, w := pointsFGB(t, dir, "want", want, true)
	for _, key := range []string{"id", ""} {
		merged, p, cs := mergeFiles(t, key, b, o, th)
		if len(cs) > 0 {
			t.Fatalf("key %q: conflicts %+v", key, cs)
		}
		if !bytes.Equal(merged, w) {
			t.Fatalf("key %q: the merge (%d bytes, %d features) is not GDAL's file of the merged points (%d bytes) from byte %d", key, len(merged), p.Count(), len(w), firstDiff(merged, w))
		}
		if p.FromTheirs != 2 {
			t.Fatalf("key %q: %d features from theirs, want 2", key, p.FromTheirs)
		}
	}
	path := filepath.Join(dir, "merged.fgb")
	if err := os.WriteFile(path, w, 0o644); err != nil {
		t.Fatal(err)
	}
	requireDerived(t, "merged", w)
	if c := ogrCount(t, path); c != "2000" {
		t.Fatalf("ogrinfo counts %s features", c)
	}
}

// The same point changed on both sides, or changed on one and deleted on
// the other, is a conflict naming its key and bbox, unless Take settles
// it; their unindexed file merges (a header change on one side).
func TestPlanMergeConflicts(t *testing.T) {
	dir := t.TempDir()
	pts := randomPoints(300, 8)
	ours, theirs := slices.Clone(pts), slices.Clone(pts)
	ours[7].v, theirs[7].v = 1, 2
	ours[9].name = "renamed"
	theirs = slices.Delete(theirs, 9, 10)
	_, b := pointsFGB(t, dir, "base", pts, true)
	_, o := pointsFGB(t, dir, "ours", ours, true)
	_, th := pointsFGB(t, dir, "theirs", theirs, true)
	_, _, cs := mergeFiles(t, "id", b, o, th)
	var got []string
	for _, c := range cs {
		if c.BBox == nil {
			t.Fatalf("conflict %s has no bbox", c.Key)
		}
		got = append(got, c.Key+": "+c.Reason)
	}
	s := strings.Join(got, "\n")
	if len(cs) != 2 || !strings.Contains(s, "id=7: feature changed on both sides") || !strings.Contains(s, "id=9: changed by ours, deleted by theirs") {
		t.Fatalf("conflicts:\n%s", s)
	}
	at7 := slices.IndexFunc(cs, func(c MergeConflict) bool { return c.Key == "id=7" })
	if bb := cs[at7].BBox; bb.MinX != pts[7].x || bb.MaxY != pts[7].y {
		t.Fatalf("id=7's bbox %v, point at %v,%v", *bb, pts[7].x, pts[7].y)
	}
	// Settled: ours for id=7, theirs (the deletion) for id=9.
	take := func(name string) int { return map[string]int{"id=7": TakeOurs, "id=9": TakeTheirs}[name] }
	_, p, cs := mergeTaking(t, MergeOptions{Key: "id", Take: take}, b, o, th)
	if len(cs) > 0 || p.Count() != 299 || p.FromTheirs != 0 {
		t.Fatalf("settled: %+v, %d features, %d from theirs", cs, p.Count(), p.FromTheirs)
	}
	// Their file without the index: not a schema change, but the header
	// (index node size) changed on one side only, so it merges.
	_, thNoIndex := pointsFGB(t, dir, "theirs2", pts[:299], false)
	if _, p, cs := mergeFiles(t, "id", b, b, thNoIndex); len(cs) > 0 || !p.Theirs || p.indexLen() != 0 {
		t.Fatalf("their unindexed file: conflicts %+v", cs)
	}
	// A changed and a deleted feature on one side, both ways.
	_, _, cs = mergeFiles(t, "id", b, th, o)
	if len(cs) != 2 {
		t.Fatalf("swapped sides: %d conflicts", len(cs))
	}
}

// rewrite runs ogr2ogr over the FlatGeobuf src with args and returns
// the new file's bytes.
func rewrite(t *testing.T, src string, args ...string) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out.fgb")
	formattest.Run1(t, "ogr2ogr", append(append([]string{"-f", "FlatGeobuf"}, args...), out, src)...)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Header changes: a CRS changed on one side merges (that side's header,
// the other side's feature edit); changed differently on both sides it
// is a header conflict; a column dropped on one side against a feature
// edit on the other is a schema conflict.
func TestPlanMergeHeaders(t *testing.T) {
	dir := t.TempDir()
	pts := randomPoints(200, 6)
	edited := slices.Clone(pts)
	edited[3].v = 42
	bp, b := pointsFGB(t, dir, "base", pts, true)
	_, o := pointsFGB(t, dir, "ours", edited, true)
	wgs := rewrite(t, bp, "-a_srs", "EPSG:4326")
	merged, p, cs := mergeFiles(t, "id", b, o, wgs)
	if len(cs) > 0 || !p.Theirs {
		t.Fatalf("CRS changed by theirs: %+v", cs)
	}
	if f := parseBytes(t, merged); f.h.crs != "EPSG:4326" || f.n != 200 {
		t.Fatalf("merged CRS %q, %d features", f.h.crs, f.n)
	}
	if _, _, cs := mergeFiles(t, "id", b, rewrite(t, bp, "-a_srs", "EPSG:3857"), wgs); len(cs) != 1 || !strings.Contains(cs[0].Reason, "header") {
		t.Fatalf("CRS changed on both sides: %+v", cs)
	}
	_, _, cs = mergeFiles(t, "id", b, o, rewrite(t, bp, "-select", "id,name"))
	if len(cs) != 1 || !strings.Contains(cs[0].Reason, "schemas differ: 3 columns on ours, 2 on theirs") {
		t.Fatalf("a column dropped by theirs: %+v", cs)
	}
}

// Duplicate keys on a side cannot be merged by key; copies of one
// feature merge by content as counts.
func TestPlanMergeDuplicates(t *testing.T) {
	dir := t.TempDir()
	pts := randomPoints(100, 2)
	dup := append(slices.Clone(pts), pts[3])
	_, b := pointsFGB(t, dir, "base", pts, true)
	_, d := pointsFGB(t, dir, "dup", dup, true)
	if _, _, cs := mergeFiles(t, "id", b, d, b); len(cs) != 1 || cs[0].Key != "id=3" {
		t.Fatalf("duplicate key: %+v", cs)
	}
	merged, p, cs := mergeFiles(t, "", b, d, d)
	if len(cs) > 0 || p.Count() != 101 || !bytes.Equal(merged, d) {
		t.Fatalf("copies by content: %+v, %d features", cs, p.Count())
	}
	if math.IsNaN(Extent(p.feats).MinX) || hashing.Sum(merged) != hashing.Sum(d) {
		t.Fatal("merge of identical sides is not their file")
	}
}

// BenchmarkPlanMerge merges two edits of 200k GDAL-written points by
// their id column: a changed value on ours, a moved point on theirs.
func BenchmarkPlanMerge(b *testing.B) {
	dir := b.TempDir()
	pts := randomPoints(200000, 4)
	ours, theirs := slices.Clone(pts), slices.Clone(pts)
	ours[10].v = 5
	theirs[20].x = 1
	_, base := pointsFGB(b, dir, "base", pts, true)
	_, o := pointsFGB(b, dir, "ours", ours, true)
	_, th := pointsFGB(b, dir, "theirs", theirs, true)
	side := func(d []byte) MergeSide { return MergeSide{R: bytes.NewReader(d), Size: int64(len(d))} }
	out, err := os.Create(filepath.Join(dir, "merged.fgb"))
	if err != nil {
		b.Fatal(err)
	}
	defer out.Close()
	b.SetBytes(int64(len(o)))
	b.ReportAllocs()
	for b.Loop() {
		p, cs, err := PlanMerge(b.Context(), side(base), side(o), side(th), MergeOptions{Key: "id"})
		if err != nil || len(cs) > 0 {
			b.Fatal(err, cs)
		}
		if _, err := p.WriteTo(b.Context(), out, side(o), side(th)); err != nil {
			b.Fatal(err)
		}
	}
}

// memWriter is an io.WriterAt growing a byte slice.
type memWriter []byte

func (m *memWriter) WriteAt(p []byte, off int64) (int, error) {
	if end := off + int64(len(p)); end > int64(len(*m)) {
		*m = append(*m, make([]byte, end-int64(len(*m)))...)
	}
	return copy((*m)[off:], p), nil
}
