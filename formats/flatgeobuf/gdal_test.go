package flatgeobuf

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/formats/formattest"
	"github.com/chunkvc/chunkvc/hashing"
)

// point is one row of a generated point layer.
type point struct {
	id   int
	name string
	v, x float64
	y    float64
}

// randomPoints returns n points uniform in [0,1000)², seeded.
func randomPoints(n int, seed int64) []point {
	rng := rand.New(rand.NewSource(seed))
	pts := make([]point, n)
	for i := range pts {
		pts[i] = point{id: i, name: fmt.Sprintf("p%d", i), v: float64(rng.Intn(100000)) / 1000,
			x: float64(rng.Intn(10000000)) / 10000, y: float64(rng.Intn(10000000)) / 10000}
	}
	return pts
}

// pointsFGB writes pts as CSV and converts it with ogr2ogr to a FlatGeobuf
// (EPSG:32633, layer "points"), returning the file's path and bytes.
func pointsFGB(t testing.TB, dir, name string, pts []point, index bool) (string, []byte) {
	t.Helper()
	formattest.RequireTool(t, "ogr2ogr")
	csv := filepath.Join(dir, name+".csv")
	f, err := os.Create(csv)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "id,name,value,x,y")
	for _, p := range pts {
		fmt.Fprintf(w, "%d,%s,%g,%g,%g\n", p.id, p.name, p.v, p.x, p.y)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".csvt"), []byte("Integer,String,Real,Real,Real"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, name+".fgb")
	formattest.Run1(t, "ogr2ogr", "-f", "FlatGeobuf", "-lco", "SPATIAL_INDEX="+yesNo(index),
		"-oo", "X_POSSIBLE_NAMES=x", "-oo", "Y_POSSIBLE_NAMES=y", "-oo", "KEEP_GEOM_COLUMNS=NO",
		"-a_srs", "EPSG:32633", "-nln", "points", out, csv)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return out, b
}

func yesNo(b bool) string {
	if b {
		return "YES"
	}
	return "NO"
}

// ogrCount runs ogrinfo over path and returns the reported feature count.
func ogrCount(t testing.TB, path string) string {
	t.Helper()
	out := formattest.Run1(t, "ogrinfo", "-ro", "-so", "-al", path)
	for _, l := range strings.Split(out, "\n") {
		if c, ok := strings.CutPrefix(l, "Feature Count: "); ok {
			return strings.TrimSpace(c)
		}
	}
	t.Fatalf("ogrinfo %s: no feature count in\n%s", path, out)
	return ""
}

// mustLayout runs the adapter, requires a native layout that passes Check
// and reassembles exactly.
func mustLayout(t testing.TB, data []byte) *formats.Layout {
	t.Helper()
	l, err := formattest.Layout(Adapter{}, data)
	if err != nil {
		t.Fatalf("adapter refused a GDAL-written file: %v", err)
	}
	if err := formats.Check(l, int64(len(data))); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(formattest.Reassemble(t, Adapter{}, l, data), data) {
		t.Fatal("reassembly differs")
	}
	return l
}

// changed returns the bytes of after's chunks not found by hash among
// before's, split into index chunks and everything else (inline included).
func changed(t testing.TB, before, after []byte) (index, rest int64) {
	t.Helper()
	lb, la := mustLayout(t, before), mustLayout(t, after)
	have := map[hashing.ID]bool{}
	for _, s := range lb.Chunks() {
		have[hashing.Sum(before[s.Off:s.Off+s.Len])] = true
	}
	rest = la.InlineBytes()
	for _, s := range la.Chunks() {
		id := hashing.Sum(after[s.Off : s.Off+s.Len])
		if have[id] {
			continue
		}
		have[id] = true
		if strings.HasPrefix(s.Key, "index") {
			index += s.Len
		} else {
			rest += s.Len
		}
	}
	return index, rest
}

// blockReuse simulates blocking p over two parsed files: blocks of after
// (by content) found among before's, and the bytes of those not found.
func blockReuse(before, after *file, p blocking) (nb, na, reused int, newBytes int64) {
	digest := func(fs []Feature, b block) hashing.ID {
		d := hashing.New()
		for _, f := range fs {
			if f.Off >= b.off && f.Off < b.off+b.len {
				d.Write(f.ID[:])
			}
		}
		return d.ID()
	}
	index := func(fs []Feature) map[int64]int {
		m := map[int64]int{}
		for i, f := range fs {
			m[f.Off] = i
		}
		return m
	}
	set := func(f *file) ([]block, []hashing.ID) {
		bs := blocks(f.feats, p)
		ids := make([]hashing.ID, len(bs))
		at := index(f.feats)
		for i, b := range bs {
			first := at[b.off]
			last := first
			for last < len(f.feats) && f.feats[last].Off < b.off+b.len {
				last++
			}
			ids[i] = digest(f.feats[first:last], b)
		}
		return bs, ids
	}
	bb, ib := set(before)
	ba, ia := set(after)
	have := map[hashing.ID]bool{}
	for _, id := range ib {
		have[id] = true
	}
	for i, id := range ia {
		if have[id] {
			reused++
		} else {
			newBytes += ba[i].len
		}
	}
	return len(bb), len(ba), reused, newBytes
}

func parseBytes(t testing.TB, data []byte) *file {
	t.Helper()
	f, err := parse(t.Context(), bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// requireDerived checks that BuildIndex reproduces the file's index.
func requireDerived(t testing.TB, name string, data []byte) {
	t.Helper()
	f := parseBytes(t, data)
	if f.indexLen == 0 {
		t.Fatalf("%s: no index", name)
	}
	// The records' hashes are taken in batches that end where the reader's
	// window moves on; a file of many windows checks every batch.
	for i, ft := range f.feats {
		if hashing.Sum(data[ft.Off+4:ft.Off+ft.Len]) != ft.ID {
			t.Fatalf("%s: record %d at %d: ID is not the hash of its flatbuffer", name, i, ft.Off)
		}
	}
	got, err := BuildIndex(f.feats, f.h.nodeSize)
	if err != nil {
		t.Fatal(err)
	}
	want := data[f.indexOff : f.indexOff+f.indexLen]
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: BuildIndex differs from GDAL's index at node %d of %d", name, firstDiff(got, want)/nodeItemSize, len(want)/nodeItemSize)
	}
	if l := mustLayout(t, data); field(l, "index") != fmt.Sprintf("node_size=%d derived", f.h.nodeSize) {
		t.Fatalf("%s: summary index = %q", name, field(l, "index"))
	}
}

// TestGDALPoints200k is issue 5's must-show: 200k points with a spatial
// index; ~60 points in a small box get a longer name; ogr2ogr rewrites the
// file. Also measures a point added outside the extent (Hilbert re-sort).
func TestGDALPoints200k(t *testing.T) {
	if testing.Short() {
		t.Skip("ogr2ogr over 200k points")
	}
	dir := t.TempDir()
	pts := randomPoints(200000, 1)
	pb, before := pointsFGB(t, dir, "before", pts, true)
	edited := append([]point(nil), pts...)
	n := 0
	for i, p := range edited {
		if p.x >= 491.5 && p.x < 508.5 && p.y >= 491.5 && p.y < 508.5 {
			edited[i].name += "-renamed-after-survey-2024"
			n++
		}
	}
	if n < 40 || n > 90 {
		t.Fatalf("%d points in the edit box, want about 60", n)
	}
	pa, after := pointsFGB(t, dir, "after", edited, true)
	for _, p := range []string{pb, pa} {
		if c := ogrCount(t, p); c != "200000" {
			t.Fatalf("ogrinfo %s: %s features", p, c)
		}
	}
	requireDerived(t, "before", before)
	requireDerived(t, "after", after)

	la := mustLayout(t, after)
	fb := parseBytes(t, before)
	size := int64(len(after))
	var blocksN, idxN int
	for _, s := range la.Chunks() {
		switch {
		case strings.HasPrefix(s.Key, "f/"):
			blocksN++
			if s.BBox == nil {
				t.Errorf("block %s has no bbox", s.Key)
			}
		case strings.HasPrefix(s.Key, "index@"):
			idxN++
		default:
			t.Errorf("unexpected key %q", s.Key)
		}
	}
	total := formattest.ChangedBytes(t, Adapter{}, before, after)
	idx, rest := changed(t, before, after)
	if idx+rest != total {
		t.Fatalf("changed bytes: %d index + %d other != %d", idx, rest, total)
	}
	pct := func(v int64) float64 { return 100 * float64(v) / float64(size) }
	t.Logf("edit of %d points: file %d B, features %d B, index %d B in %d chunks, %d blocks, inline %d B",
		n, size, size-fb.featOff, fb.indexLen, idxN, blocksN, la.InlineBytes())
	t.Logf("changed bytes: total %d (%.2f%%) = index %d (%.2f%%) + blocks/inline %d (%.2f%%)",
		total, pct(total), idx, pct(idx), rest, pct(rest))
	// The index is derived (rebuilt at checkout, never stored), so the
	// whole edit must cost at most 8% of the file. Stored as chunks it cost
	// 26.8% (every leaf offset after the first edited record shifts).
	if idx != 0 || idxN != 0 {
		t.Errorf("index stored as %d chunks (%d bytes changed), want it derived", idxN, idx)
	}
	var derived int64
	for _, s := range la.Segments {
		if s.IsDerived() {
			derived += s.Len
		}
	}
	if derived != fb.indexLen {
		t.Errorf("derived bytes %d, index is %d bytes", derived, fb.indexLen)
	}
	if pct(total) > 8 {
		t.Errorf("edit costs %.2f%% of the file, want ≤ 8%%", pct(total))
	}

	lb := mustLayout(t, before)
	keys := map[string]hashing.ID{}
	for _, s := range lb.Chunks() {
		keys[s.Key] = hashing.Sum(before[s.Off : s.Off+s.Len])
	}
	kept, modified, added := 0, 0, 0
	for _, s := range la.Chunks() {
		if !strings.HasPrefix(s.Key, "f/") {
			continue
		}
		id, ok := keys[s.Key]
		switch {
		case !ok:
			added++
		case id == hashing.Sum(after[s.Off:s.Off+s.Len]):
			kept++
		default:
			modified++
		}
	}
	t.Logf("block keys: %d kept with the same bytes, %d kept with new bytes, %d new", kept, modified, added)
	if kept < blocksN-5 {
		t.Errorf("only %d of %d block keys survive a local edit", kept, blocksN)
	}

	fa := parseBytes(t, after)
	for _, p := range []blocking{
		{32 << 10, 64 << 10, 512 << 10, SplitMin},
		{64 << 10, 128 << 10, 1 << 20, SplitMin},
		defaultBlocking,
		{256 << 10, 512 << 10, 2 << 20, SplitMin},
	} {
		nb, na, reused, nbytes := blockReuse(fb, fa, p)
		t.Logf("blocking min=%dK avg=%dK max=%dK: %d→%d blocks, %d reused, new block bytes %d (%.2f%%)",
			p.min>>10, p.avg>>10, p.max>>10, nb, na, reused, nbytes, pct(nbytes))
	}

	t.Run("add-outside-extent", func(t *testing.T) {
		more := append(append([]point(nil), pts...), point{id: len(pts), name: "far", v: 1, x: 5000, y: 5000})
		_, added := pointsFGB(t, dir, "added", more, true)
		requireDerived(t, "added", added)
		total := formattest.ChangedBytes(t, Adapter{}, before, added)
		idx, rest := changed(t, before, added)
		nb, na, reused, _ := blockReuse(fb, parseBytes(t, added), defaultBlocking)
		same := 0
		fd := parseBytes(t, added)
		for i := range min(len(fb.feats), len(fd.feats)) {
			if fb.feats[i].ID == fd.feats[i].ID {
				same++
			}
		}
		t.Logf("add outside extent: %d/%d features at the same ordinal; blocks %d→%d, %d reused; changed %d B (%.1f%%): index %d, blocks/inline %d",
			same, len(fd.feats), nb, na, reused, total, 100*float64(total)/float64(len(added)), idx, rest)
	})
}

// TestGDALGeometries: BuildIndex equals GDAL's index for every geometry
// type and for feature counts around the node size; files without an
// index are native too.
func TestGDALGeometries(t *testing.T) {
	formattest.RequireTool(t, "ogr2ogr")
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(7))
	geom := func(i int) string {
		x, y := rng.Float64()*360-180, rng.Float64()*170-85
		c := func(dx, dy float64) string { return fmt.Sprintf("[%g,%g]", x+dx, y+dy) }
		switch i % 8 {
		case 0:
			return `{"type":"Point","coordinates":` + c(0, 0) + `}`
		case 1:
			return `{"type":"LineString","coordinates":[` + c(0, 0) + "," + c(1, 2) + "," + c(-1, 3) + `]}`
		case 2:
			return `{"type":"Polygon","coordinates":[[` + c(0, 0) + "," + c(2, 0) + "," + c(2, 2) + "," + c(0, 0) +
				`],[` + c(0.5, 0.5) + "," + c(1, 0.5) + "," + c(1, 1) + "," + c(0.5, 0.5) + `]]}`
		case 3:
			return `{"type":"MultiPoint","coordinates":[` + c(0, 0) + "," + c(-3, 4) + `]}`
		case 4:
			return `{"type":"MultiLineString","coordinates":[[` + c(0, 0) + "," + c(1, 1) + `],[` + c(-2, -2) + "," + c(-1, 5) + `]]}`
		case 5:
			return `{"type":"MultiPolygon","coordinates":[[[` + c(0, 0) + "," + c(1, 0) + "," + c(1, 1) + "," + c(0, 0) +
				`]],[[` + c(3, 3) + "," + c(4, 3) + "," + c(4, 4) + "," + c(3, 3) + `]]]}`
		case 6:
			return `{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":` + c(-4, -1) +
				`},{"type":"LineString","coordinates":[` + c(0, 0) + "," + c(2, 6) + `]}]}`
		default:
			return `{"type":"Point","coordinates":[` + fmt.Sprintf("%g,%g,%g", x, y, rng.Float64()*100) + `]}`
		}
	}
	for _, n := range []int{1, 16, 17, 257, 1000} {
		for _, mixed := range []bool{false, true} {
			name := fmt.Sprintf("n%d-mixed%v", n, mixed)
			var b strings.Builder
			b.WriteString(`{"type":"FeatureCollection","features":[`)
			for i := range n {
				if i > 0 {
					b.WriteString(",")
				}
				k := i
				if !mixed {
					k = 2 // polygons with holes
				}
				fmt.Fprintf(&b, `{"type":"Feature","properties":{"id":%d,"label":"f%d"},"geometry":%s}`, i, i, geom(k))
			}
			b.WriteString("]}")
			src := filepath.Join(dir, name+".geojson")
			if err := os.WriteFile(src, []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, index := range []bool{true, false} {
				out := filepath.Join(dir, fmt.Sprintf("%s-index%v.fgb", name, index))
				formattest.Run1(t, "ogr2ogr", "-f", "FlatGeobuf", "-lco", "SPATIAL_INDEX="+yesNo(index), "-nln", "layer", out, src)
				data, err := os.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				l := mustLayout(t, data)
				if got := field(l, "features"); got != fmt.Sprint(n) {
					t.Errorf("%s: features = %s, want %d", out, got, n)
				}
				if index {
					requireDerived(t, out, data)
				} else if field(l, "index") != "none" {
					t.Errorf("%s: index = %q, want none", out, field(l, "index"))
				}
			}
		}
	}
}

// TestGDALCurves: GDAL's index boxes a circular arc by its true extent,
// not its control points, so the rebuild differs and the summary must say
// "verbatim" (the index stays stored as chunks).
func TestGDALCurves(t *testing.T) {
	formattest.RequireTool(t, "ogr2ogr")
	dir := t.TempDir()
	src := filepath.Join(dir, "c.csv")
	csv := "id,WKT\n1,\"CIRCULARSTRING (0 0,1 2,2 0)\"\n2,\"LINESTRING (5 5,6 6)\"\n"
	if err := os.WriteFile(src, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "c.fgb")
	formattest.Run1(t, "ogr2ogr", "-f", "FlatGeobuf", "-lco", "SPATIAL_INDEX=YES",
		"-oo", "GEOM_POSSIBLE_NAMES=WKT", "-oo", "KEEP_GEOM_COLUMNS=NO", out, src)
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	l := mustLayout(t, data)
	if got := field(l, "index"); got != "node_size=16 verbatim" {
		t.Fatalf("index = %q, want verbatim (summary %v)", got, l.Summary)
	}
	if !strings.HasPrefix(field(l, "bbox"), "-0.25,") {
		t.Errorf("bbox %q: want GDAL's arc extent from the header envelope", field(l, "bbox"))
	}
}
