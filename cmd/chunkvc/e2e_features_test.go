package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/diff/featurediff"
	"github.com/chunkvc/chunkvc/formats/formattest"
	"github.com/chunkvc/chunkvc/formats/parquet/pqgen"
)

// The lake of the feature-diff tests: four partitions lake/cell=<c>/part.parquet
// of five row groups of 100 rows each; row i of cell c has id c*1000+i.
const (
	lakeCells = 4
	lakeRGs   = 5
	lakePer   = 100
)

func lakeRow(c, i int) pqgen.Row {
	id := int64(c*1000 + i)
	return pqgen.Point(id, fmt.Sprintf("n-%d", id%7), float64(id)/4, float64(c*10+i%10), float64(i/10)/4)
}

// lakeGroups is version v (1 or 2) of cell c's row groups. Version 2
// makes, row group by row group, the edits:
//   - cell 0, row group 1: 100 rows modified (value + 1000; ids 100–109
//     also move 0.5 east);
//   - cell 1, row group 2: ids 1200–1204 leave…
//   - cell 2: …and arrive in a new row group 5, with 20 added rows
//     (ids 2500–2519);
//   - cell 3, row group 0: ids 3000–3009 removed.
func lakeGroups(c, v int) [][]pqgen.Row {
	var groups [][]pqgen.Row
	for g := range lakeRGs {
		var rows []pqgen.Row
		for i := g * lakePer; i < (g+1)*lakePer; i++ {
			r := lakeRow(c, i)
			id := int(r.ID)
			switch {
			case v == 1:
			case c == 0 && g == 1:
				r.Value += 1000
				if id < 110 {
					r = pqgen.Point(r.ID, r.Name, r.Value, float64(i%10)+0.5, float64(i/10)/4)
				}
			case c == 1 && id >= 1200 && id < 1205, c == 3 && id < 3010:
				continue
			}
			rows = append(rows, r)
		}
		groups = append(groups, rows)
	}
	if c == 2 && v == 2 {
		var last []pqgen.Row
		for i := 500; i < 520; i++ {
			last = append(last, lakeRow(2, i))
		}
		for i := 200; i < 205; i++ {
			last = append(last, lakeRow(1, i))
		}
		groups = append(groups, last)
	}
	return groups
}

func writeLake(t *testing.T, r *runner, v int) {
	t.Helper()
	for c := range lakeCells {
		var b bytes.Buffer
		if err := pqgen.WriteGroups(&b, lakeGroups(c, v)); err != nil {
			t.Fatal(err)
		}
		r.write(fmt.Sprintf("lake/cell=%d/part.parquet", c), b.Bytes())
	}
}

// lakeRepo commits version 1 and 2 of the lake.
func lakeRepo(t *testing.T) *runner {
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "lake/**/*.parquet")
	writeLake(t, r, 1)
	r.cv("commit", "-m", "v1")
	writeLake(t, r, 2)
	r.cv("commit", "-m", "v2")
	return r
}

type featuresOut struct {
	Features featurediff.Features `json:"features"`
}

// Issue 31: the lake's edits come out as they were made: 100 modified,
// 20 added, 10 removed, 5 moved, each in the partition it was made in,
// with the old and new values the generator wrote.
func TestDiffFeaturesLake(t *testing.T) {
	r := lakeRepo(t)
	var out featuresOut
	r.jsonOf(&out, "diff", "HEAD~1", "HEAD", "--features")
	f := out.Features
	if want := (featurediff.Totals{Added: 20, Removed: 10, Modified: 100, Moved: 5}); f.Totals != want {
		t.Fatalf("totals %+v, want %+v", f.Totals, want)
	}
	type counts struct{ a, rm, m, in, out int }
	want := map[string]counts{
		"lake/cell=0/part.parquet": {m: 100},
		"lake/cell=1/part.parquet": {out: 5},
		"lake/cell=2/part.parquet": {a: 20, in: 5},
		"lake/cell=3/part.parquet": {rm: 10},
	}
	if len(f.Files) != len(want) {
		t.Fatalf("files %+v", f.Files)
	}
	for _, fs := range f.Files {
		if got := (counts{fs.Added, fs.Removed, fs.Modified, fs.MovedIn, fs.MovedOut}); got != want[fs.Path] {
			t.Errorf("%s: %+v, want %+v", fs.Path, got, want[fs.Path])
		}
		if fs.Key.Column == nil || *fs.Key.Column != "id" || fs.Key.Source != featurediff.KeyDetected {
			t.Errorf("%s: key %+v, want id (detected)", fs.Path, fs.Key)
		}
	}
	for _, ch := range f.Changes {
		var id int
		fmt.Sscan(ch.Key, &id)
		switch ch.Change {
		case featurediff.Modified:
			wantCols := "value"
			if id < 110 {
				wantCols = "value,geometry"
			}
			var names []string
			for _, c := range ch.Columns {
				names = append(names, c.Name)
			}
			if strings.Join(names, ",") != wantCols || ch.Columns[0].Old != float64(id)/4 || ch.Columns[0].New != float64(id)/4+1000 {
				t.Errorf("modified %s: columns %+v", ch.Key, ch.Columns)
			}
			if id < 110 && (ch.BBoxNew == nil || ch.BBoxNew[0] != float64(id%10)+0.5) {
				t.Errorf("modified %s: bbox_new %v", ch.Key, ch.BBoxNew)
			}
		case featurediff.Moved:
			if id < 1200 || id >= 1205 || ch.FromPath != "lake/cell=1/part.parquet" || ch.Path != "lake/cell=2/part.parquet" || len(ch.Columns) != 0 {
				t.Errorf("moved %+v", ch)
			}
		case featurediff.Added:
			if id < 2500 || id >= 2520 || ch.GeometryNew == nil || ch.GeometryOld != nil {
				t.Errorf("added %+v", ch)
			}
		case featurediff.Removed:
			if id < 3000 || id >= 3010 || ch.Path != "lake/cell=3/part.parquet" {
				t.Errorf("removed %+v", ch)
			}
		}
	}
	if len(f.Duplicates) != 0 {
		t.Errorf("duplicates %+v", f.Duplicates)
	}
	// The review page carries the same changes: every moved key, with
	// the partition it came from.
	r.cv("diff", "HEAD~1", "HEAD", "--format", "html", "-o", "review.html")
	page := string(r.read("review.html"))
	for id := 1200; id < 1205; id++ {
		if !strings.Contains(page, fmt.Sprintf(`"key":"%d"`, id)) {
			t.Fatalf("the review page lacks moved key %d", id)
		}
	}
}

// The four outputs of the lake diff, against golden files (go test -run
// TestDiffFeaturesGolden -update rewrites them).
func TestDiffFeaturesGolden(t *testing.T) {
	checkFeatureGoldens(t, lakeRepo(t), "lake")
}

// checkFeatureGoldens checks the four outputs of diff HEAD~1 HEAD
// --features against testdata/diff/features/NAME.{json,txt,md,geojson}
// (text and markdown from their feature part on).
func checkFeatureGoldens(t *testing.T, r *runner, name string) {
	t.Helper()
	diff := func(args ...string) string {
		return r.cv(append([]string{"diff", "HEAD~1", "HEAD", "--features"}, args...)...)
	}
	checkGolden(t, "features/"+name+".json", goldenFeaturesJSON(t, diff("--json")))
	text := diff()
	checkGolden(t, "features/"+name+".txt", []byte(text[strings.Index(text, "features lake/"):]))
	md := diff("--format", "markdown")
	checkGolden(t, "features/"+name+".md", []byte(md[strings.Index(md, "### Features"):]))
	checkGolden(t, "features/"+name+".geojson", []byte(diff("--format", "geojson")))
}

// writeBigParquet writes groups row groups of per rows to p, row ids
// 0…, value of row edit (if ≥ 0) set to -1.
func writeBigParquet(t testing.TB, r *runner, p string, groups, per, edit int) {
	t.Helper()
	var gs [][]pqgen.Row
	for g := range groups {
		rows := make([]pqgen.Row, 0, per)
		for i := g * per; i < (g+1)*per; i++ {
			row := lakeRow(0, i)
			row.ID = int64(i)
			if i == edit {
				row.Value = -1
			}
			rows = append(rows, row)
		}
		gs = append(gs, rows)
	}
	var b bytes.Buffer
	if err := pqgen.WriteGroups(&b, gs); err != nil {
		t.Fatal(err)
	}
	r.write(p, b.Bytes())
}

// Issue 31: an edit of one row in one row group of five decodes that row
// group only: bytes_read stays within 1.25 × the changed row group's
// chunks (old and new; the rest is the two layouts with the footer) and
// far below the file.
func TestDiffFeaturesReadsChangedRowGroup(t *testing.T) {
	const groups, per = 5, 20000
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "*.parquet")
	writeBigParquet(t, r, "big.parquet", groups, per, -1)
	r.cv("commit", "-m", "v1")
	writeBigParquet(t, r, "big.parquet", groups, per, 3*per+17)
	r.cv("commit", "-m", "v2")
	var rg3, size int64
	for _, rev := range []string{"HEAD~1", "HEAD"} {
		var ls lsChunks
		r.jsonOf(&ls, "ls-chunks", rev+":big.parquet")
		size = ls.Size
		for _, c := range ls.Chunks {
			if strings.HasPrefix(c.Key, "rg3/") {
				rg3 += c.Size
			}
		}
	}
	var out featuresOut
	r.jsonOf(&out, "diff", "HEAD~1", "HEAD", "--features")
	f := out.Features
	if f.Totals.Modified != 1 || len(f.Changes) != 1 || f.Changes[0].Key != fmt.Sprint(3*per+17) {
		t.Fatalf("changes %+v", f.Changes)
	}
	fs := f.Files[0]
	if fmt.Sprint(fs.RowGroups, fs.RowGroupsOld) != "[3] [3]" {
		t.Errorf("row groups read %v (old %v), want [3] [3]", fs.RowGroups, fs.RowGroupsOld)
	}
	t.Logf("bytes_read %d; row group 3 chunks (old + new) %d; file %d", f.BytesRead, rg3, size)
	if f.BytesRead > rg3*5/4 || f.BytesRead > size/2 {
		t.Errorf("bytes_read %d: want ≤ 1.25 × %d (row group 3, both versions) and ≤ half the %d-byte file", f.BytesRead, rg3, size)
	}
}

// writeFGBLake writes version v of the lake as one FlatGeobuf per cell
// (ogr2ogr from GeoJSON, no spatial index, so records keep the rows'
// order): the same rows and edits as the GeoParquet lake.
func writeFGBLake(t *testing.T, r *runner, v int) {
	t.Helper()
	for c := range lakeCells {
		writeFGBCell(t, r, c, lakeGroups(c, v))
	}
}

// writeFGBCell writes the rows of groups as lake/cell=<c>.fgb.
func writeFGBCell(t *testing.T, r *runner, c int, groups [][]pqgen.Row) {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"type":"FeatureCollection","features":[`)
	n := 0
	for _, g := range groups {
		for _, row := range g {
			if n > 0 {
				b.WriteByte(',')
			}
			n++
			fmt.Fprintf(&b, `{"type":"Feature","properties":{"id":%d,"name":%q,"value":%s},"geometry":{"type":"Point","coordinates":[%s,%s]}}`,
				row.ID, row.Name, ftoa(row.Value), ftoa(row.BBox.XMin), ftoa(row.BBox.YMin))
		}
	}
	b.WriteString("]}")
	src := filepath.Join(t.TempDir(), "in.geojson")
	if err := os.WriteFile(src, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	dst := r.path(fmt.Sprintf("lake/cell=%d.fgb", c))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Remove(dst)
	formattest.Run1(t, "ogr2ogr", "-f", "FlatGeobuf", "-lco", "SPATIAL_INDEX=NO", "-nln", "lake", dst, src)
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// Issue 31: the GeoParquet lake's edits made to FlatGeobuf partitions
// come out the same: features paired by their id property.
func TestDiffFeaturesFlatGeobuf(t *testing.T) {
	formattest.RequireTool(t, "ogr2ogr")
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "lake/*.fgb")
	writeFGBLake(t, r, 1)
	r.cv("commit", "-m", "v1")
	writeFGBLake(t, r, 2)
	r.cv("commit", "-m", "v2")
	var out featuresOut
	r.jsonOf(&out, "diff", "HEAD~1", "HEAD", "--features")
	f := out.Features
	if want := (featurediff.Totals{Added: 20, Removed: 10, Modified: 100, Moved: 5}); f.Totals != want {
		t.Fatalf("totals %+v, want %+v; warnings %v", f.Totals, want, f.Warnings)
	}
	for _, ch := range f.Changes {
		var id int
		fmt.Sscan(ch.Key, &id)
		if ch.Change == featurediff.Moved && (ch.FromPath != "lake/cell=1.fgb" || ch.Path != "lake/cell=2.fgb") {
			t.Errorf("moved %+v", ch)
		}
		if ch.Change == featurediff.Modified && (ch.Columns[0].Name != "value" || ch.Columns[0].New != float64(id)/4+1000) {
			t.Errorf("modified %+v", ch)
		}
	}
	checkFeatureGoldens(t, r, "fgb")
}

// Issue 31: a one-feature edit of a FlatGeobuf decodes the blocks that
// changed, not the file: bytes_read stays under half the file.
func TestDiffFeaturesFlatGeobufReadsChangedBlocks(t *testing.T) {
	formattest.RequireTool(t, "ogr2ogr")
	const n = 30000
	write := func(r *runner, edit bool) {
		var b strings.Builder
		b.WriteString(`{"type":"FeatureCollection","features":[`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			v := i
			if edit && i == n/2 {
				v = -1
			}
			fmt.Fprintf(&b, `{"type":"Feature","properties":{"fid":%d,"label":"feature number %d","value":%d},"geometry":{"type":"Point","coordinates":[%d,%d]}}`, i, i, v, i%360-180, i/360%180-90)
		}
		b.WriteString("]}")
		src := filepath.Join(t.TempDir(), "in.geojson")
		if err := os.WriteFile(src, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Remove(r.path("big.fgb"))
		formattest.Run1(t, "ogr2ogr", "-f", "FlatGeobuf", "-lco", "SPATIAL_INDEX=NO", "-nln", "big", r.path("big.fgb"), src)
	}
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "*.fgb")
	write(r, false)
	r.cv("commit", "-m", "v1")
	write(r, true)
	r.cv("commit", "-m", "v2")
	size := int64(len(r.read("big.fgb")))
	var out featuresOut
	r.jsonOf(&out, "diff", "HEAD~1", "HEAD", "--features")
	f := out.Features
	if f.Totals.Modified != 1 || len(f.Changes) != 1 || f.Changes[0].Key != fmt.Sprint(n/2) || f.Files[0].Key.Source != featurediff.KeyDetected {
		t.Fatalf("features %+v", f)
	}
	if c := f.Changes[0].Columns; len(c) != 1 || c[0].Name != "value" || c[0].Old != float64(n/2) || c[0].New != float64(-1) {
		t.Fatalf("columns %+v", c)
	}
	t.Logf("bytes_read %d of a %d-byte file", f.BytesRead, size)
	if f.BytesRead > size/2 {
		t.Errorf("bytes_read %d > half the %d-byte file", f.BytesRead, size)
	}
}

// Issue 31: the key comes from --key, else a config key line, else
// detection, and each file says which; a column no file has falls back
// to content, where a modified row is a removed one plus an added one.
func TestDiffFeaturesKeyChoice(t *testing.T) {
	r := lakeRepo(t)
	cfg := string(r.read(".chunkvc/config"))
	r.write(".chunkvc/config", []byte(cfg+"key = id lake/cell=0/*\n"))
	var out featuresOut
	r.jsonOf(&out, "diff", "HEAD~1", "HEAD", "--features")
	for _, fs := range out.Features.Files {
		want := featurediff.KeyDetected
		if strings.HasPrefix(fs.Path, "lake/cell=0/") {
			want = featurediff.KeyConfig
		}
		if fs.Key.Source != want || *fs.Key.Column != "id" {
			t.Errorf("%s: key %s, want id (%s)", fs.Path, fs.Key, want)
		}
	}
	if text := r.cv("diff", "HEAD~1", "HEAD", "--features"); !strings.Contains(text, "features lake/cell=0/part.parquet: key id (config)\n") {
		t.Errorf("text does not show the key:\n%s", text[:min(len(text), 500)])
	}
	out = featuresOut{}
	r.jsonOf(&out, "diff", "HEAD~1", "HEAD", "--features", "--key", "no_such_column")
	if want := (featurediff.Totals{Added: 120, Removed: 110, Moved: 5}); out.Features.Totals != want {
		t.Errorf("by content: totals %+v, want %+v", out.Features.Totals, want)
	}
	for _, fs := range out.Features.Files {
		if fs.Key.Source != featurediff.KeyContent || fs.Key.Column != nil {
			t.Errorf("%s: key %+v, want content", fs.Path, fs.Key)
		}
	}
	out = featuresOut{}
	r.jsonOf(&out, "diff", "HEAD~1", "HEAD", "--features", "--key", "name")
	if fs := out.Features.Files[0]; fs.Key.Source != featurediff.KeyFlag || len(out.Features.Duplicates) == 0 {
		t.Errorf("--key name: key %s, %d duplicates (names repeat: want some)", fs.Key, len(out.Features.Duplicates))
	}
}

// Issue 31: a partition rewritten under a new name is compared with the
// file it was rewritten from (diff's rewrite pairing): its edited rows
// are modified, not moved, and only the row group that differs from the
// pair is decoded.
func TestDiffFeaturesRewrite(t *testing.T) {
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "lake/**/*.parquet")
	write := func(p string, v int) {
		var b bytes.Buffer
		if err := pqgen.WriteGroups(&b, lakeGroups(0, v)); err != nil {
			t.Fatal(err)
		}
		r.write(p, b.Bytes())
	}
	write("lake/cell=0/part-1.parquet", 1)
	r.cv("commit", "-m", "v1")
	if err := os.Remove(r.path("lake/cell=0/part-1.parquet")); err != nil {
		t.Fatal(err)
	}
	write("lake/cell=0/part-2.parquet", 2)
	r.cv("commit", "-m", "v2")
	var out struct {
		Files []struct {
			Path, Status string
		} `json:"files"`
		Features featurediff.Features `json:"features"`
	}
	r.jsonOf(&out, "diff", "HEAD~1", "HEAD", "--features")
	if len(out.Files) != 1 || out.Files[0].Status != "rewritten" {
		t.Fatalf("files %+v: want one rewritten", out.Files)
	}
	f := out.Features
	if f.Totals != (featurediff.Totals{Modified: 100}) {
		t.Fatalf("totals %+v", f.Totals)
	}
	if len(f.Files) != 1 || f.Files[0].Path != "lake/cell=0/part-2.parquet" ||
		fmt.Sprint(f.Files[0].RowGroups, f.Files[0].RowGroupsOld) != "[1] [1]" {
		t.Errorf("files %+v", f.Files)
	}
}

// Issue 31: against the working tree (here: version 1 written back over
// a HEAD holding version 2) the edits come out reversed, read from the
// working files.
func TestDiffFeaturesWorktree(t *testing.T) {
	r := lakeRepo(t)
	writeLake(t, r, 1)
	var out featuresOut
	r.jsonOf(&out, "diff", "--features")
	if want := (featurediff.Totals{Added: 10, Removed: 20, Modified: 100, Moved: 5}); out.Features.Totals != want {
		t.Fatalf("totals %+v, want %+v (warnings %q)", out.Features.Totals, want, out.Features.Warnings)
	}
	for _, ch := range out.Features.Changes {
		if ch.Change == featurediff.Moved && (ch.FromPath != "lake/cell=2/part.parquet" || ch.Path != "lake/cell=1/part.parquet") {
			t.Errorf("moved %+v", ch)
		}
	}
}

// goldenFeaturesJSON is the "features" object of diff --json output js
// with one element of each list a line, for golden files that stay
// readable.
func goldenFeaturesJSON(t *testing.T, js string) []byte {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(js), &top); err != nil {
		t.Fatal(err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(top["features"], &obj); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.WriteString("{\n")
	for i, k := range []string{"files", "changes", "duplicates", "totals", "truncated", "bytes_read", "warnings"} {
		v, ok := obj[k]
		if !ok {
			continue
		}
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, "%q: ", k)
		var list []json.RawMessage
		if json.Unmarshal(v, &list) != nil || len(list) == 0 {
			if err := json.Compact(&b, v); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b.WriteString("[")
		for j, e := range list {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString("\n ")
			if err := json.Compact(&b, e); err != nil {
				t.Fatal(err)
			}
		}
		b.WriteString("\n]")
	}
	b.WriteString("\n}\n")
	return b.Bytes()
}

// Issue 31: a key that arrives in one partition while an unchanged
// partition of the lake still holds it is a duplicate: found by reading
// only the key column of the row groups whose statistics cover it.
func TestDiffFeaturesLakeDuplicate(t *testing.T) {
	r := lakeRepo(t)
	groups := lakeGroups(2, 2)
	last := len(groups) - 1
	groups[last] = append(groups[last], lakeRow(3, 450)) // id 3450, still in cell=3, row group 4
	var b bytes.Buffer
	if err := pqgen.WriteGroups(&b, groups); err != nil {
		t.Fatal(err)
	}
	r.write("lake/cell=2/part.parquet", b.Bytes())
	r.cv("commit", "-m", "v3")
	var out featuresOut
	r.jsonOf(&out, "diff", "HEAD~1", "HEAD", "--features")
	f := out.Features
	if f.Totals != (featurediff.Totals{Added: 1}) {
		t.Fatalf("totals %+v", f.Totals)
	}
	want := `[{3450 [lake/cell=2/part.parquet lake/cell=3/part.parquet]}]`
	if got := fmt.Sprint(f.Duplicates); got != want || len(f.Warnings) != 1 {
		t.Errorf("duplicates %s, want %s; warnings %q", got, want, f.Warnings)
	}
	// Of the three unchanged partitions only their layouts (with the
	// footer: most of these small files) and one row group's id column
	// are read; reading their chunks too would pass their size.
	extra, others := f.BytesRead-f.Files[0].BytesRead, int64(0)
	for _, c := range []int{0, 1, 3} {
		others += int64(len(r.read(fmt.Sprintf("lake/cell=%d/part.parquet", c))))
	}
	t.Logf("lake check read %d bytes of the other partitions' %d", extra, others)
	if extra >= others {
		t.Errorf("lake check read %d bytes of the other partitions' %d", extra, others)
	}
}

// Issue 31: as in a Parquet lake, a key that arrives in one FlatGeobuf
// partition while an unchanged one still holds it is a duplicate, and a
// warning; the feature that merely moved between partitions is not.
func TestDiffFeaturesFlatGeobufLakeDuplicate(t *testing.T) {
	formattest.RequireTool(t, "ogr2ogr")
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "lake/*.fgb")
	writeFGBLake(t, r, 2)
	r.cv("commit", "-m", "v2")
	groups := lakeGroups(2, 2)
	last := len(groups) - 1
	groups[last] = append(groups[last], lakeRow(3, 450)) // id 3450, still in cell=3
	writeFGBCell(t, r, 2, groups)
	r.cv("commit", "-m", "v3")
	var out featuresOut
	r.jsonOf(&out, "diff", "HEAD~1", "HEAD", "--features")
	f := out.Features
	if f.Totals != (featurediff.Totals{Added: 1}) {
		t.Fatalf("totals %+v; warnings %q", f.Totals, f.Warnings)
	}
	want := `[{3450 [lake/cell=2.fgb lake/cell=3.fgb]}]`
	if got := fmt.Sprint(f.Duplicates); got != want || len(f.Warnings) != 1 ||
		f.Warnings[0] != "duplicate key 3450 in the new revision: lake/cell=2.fgb, lake/cell=3.fgb" {
		t.Errorf("duplicates %s, want %s; warnings %q", got, want, f.Warnings)
	}
	// Once the old copy is removed the key is no duplicate.
	groups = lakeGroups(3, 2)
	groups[4] = slices.DeleteFunc(groups[4], func(row pqgen.Row) bool { return row.ID == 3450 })
	writeFGBCell(t, r, 3, groups)
	r.cv("commit", "-m", "v4")
	r.jsonOf(&out, "diff", "HEAD~1", "HEAD", "--features")
	if f := out.Features; f.Totals != (featurediff.Totals{Removed: 1}) || len(f.Duplicates) != 0 {
		t.Errorf("after removing the first copy: totals %+v, duplicates %v", f.Totals, f.Duplicates)
	}
}
