package featurediff

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
)

func wkbPoint(x, y float64) []byte {
	b := []byte{1}
	b = binary.LittleEndian.AppendUint32(b, 1)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(y))
}

func TestParseWKB(t *testing.T) {
	le := binary.LittleEndian
	f := func(b []byte, v ...float64) []byte {
		for _, x := range v {
			b = le.AppendUint64(b, math.Float64bits(x))
		}
		return b
	}
	u := func(b []byte, v ...uint32) []byte {
		for _, x := range v {
			b = le.AppendUint32(b, x)
		}
		return b
	}
	poly := f(u([]byte{1}, 3, 1, 4), 0, 0, 1, 0, 1, 1, 0, 0)
	multi := append(u([]byte{1}, 6, 2), append(poly, poly...)...)
	pointZ := f(u([]byte{1}, 1001), 1, 2, 3)
	ewkbZ := f(u([]byte{1}, 0xa0000001, 4326), 1, 2, 3) // EWKB Z + SRID
	be := []byte{0, 0, 0, 0, 2, 0, 0, 0, 1}
	be = binary.BigEndian.AppendUint64(be, math.Float64bits(5))
	be = binary.BigEndian.AppendUint64(be, math.Float64bits(6))
	for _, tc := range []struct {
		name string
		b    []byte
		wkt  string
		json string
		bbox string
	}{
		{"point", wkbPoint(1.5, -2), "POINT (1.5 -2)", `{"type":"Point","coordinates":[1.5,-2]}`, "&[1.5 -2 1.5 -2]"},
		{"polygon", poly, "POLYGON ((0 0, 1 0, 1 1, 0 0))", `{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]]}`, "&[0 0 1 1]"},
		{"multipolygon", multi, "MULTIPOLYGON (((0 0, 1 0, 1 1, 0 0)), ((0 0, 1 0, 1 1, 0 0)))", "", "&[0 0 1 1]"},
		{"iso z", pointZ, "POINT (1 2 3)", `{"type":"Point","coordinates":[1,2,3]}`, "&[1 2 1 2]"},
		{"ewkb z srid", ewkbZ, "POINT (1 2 3)", "", "&[1 2 1 2]"},
		{"empty point", wkbPoint(math.NaN(), math.NaN()), "POINT EMPTY", `{"type":"Point","coordinates":[]}`, "<nil>"},
		{"big endian linestring", be, "LINESTRING (5 6)", `{"type":"LineString","coordinates":[[5,6]]}`, "&[5 6 5 6]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ParseWKB(tc.b)
			if err != nil {
				t.Fatal(err)
			}
			if w := g.WKT(); w != tc.wkt {
				t.Errorf("WKT %q, want %q", w, tc.wkt)
			}
			if tc.json != "" {
				if j, _ := json.Marshal(g); string(j) != tc.json {
					t.Errorf("GeoJSON %s, want %s", j, tc.json)
				}
			}
			if b := fmt.Sprint(g.BBox()); b != tc.bbox {
				t.Errorf("bbox %s, want %s", b, tc.bbox)
			}
		})
	}
	for _, bad := range [][]byte{nil, {1, 1, 0, 0}, u([]byte{1}, 2, 1<<30), u([]byte{1}, 99)} {
		if _, err := ParseWKB(bad); err == nil {
			t.Errorf("ParseWKB(%x) accepted", bad)
		}
	}
}

func keyed(path string, col string, rows ...Row) Table {
	return Table{Path: path, Key: KeyChoice{Column: &col, Source: KeyFlag}, Columns: []string{"id", "v"}, Geometry: "geometry", Rows: rows}
}

func row(id int, v any, x float64) Row {
	return Row{Key: fmt.Sprint(id), Values: []any{int64(id), v}, Geometry: wkbPoint(x, 0)}
}

// Values JSON cannot spell (NaN, ±Inf) come out as their names, so diff
// --json never fails on them.
func TestNonFiniteValues(t *testing.T) {
	f := Compare(Input{
		Old: []Table{keyed("a", "id", row(1, 1.0, 0))},
		New: []Table{keyed("a", "id", row(1, math.NaN(), 0), row(2, math.Inf(-1), 0))},
	})
	j, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(j), `"new":"NaN"`) || !strings.Contains(string(j), `"new":"-Inf"`) {
		t.Errorf("json %s", j)
	}
}

func TestCompareKeyed(t *testing.T) {
	in := Input{
		Old: []Table{keyed("a", "id", row(1, "x", 0), row(2, "y", 0), row(3, "z", 0)), keyed("b", "id", row(9, "q", 0))},
		New: []Table{keyed("a", "id", row(1, "x", 0), row(2, "Y", 1), row(4, "w", 0)), keyed("b", "id", row(3, "z", 0))},
	}
	f := Compare(in)
	if want := (Totals{Added: 1, Removed: 1, Modified: 1, Moved: 1}); f.Totals != want {
		t.Fatalf("totals %+v, want %+v", f.Totals, want)
	}
	var got []string
	for _, ch := range f.Changes {
		got = append(got, ch.Change+" "+ch.Key+" "+ch.FromPath+">"+ch.Path)
	}
	if s := strings.Join(got, ", "); s != "added 4 >a, removed 9 >b, modified 2 >a, moved 3 a>b" {
		t.Errorf("changes %s", s)
	}
	m := f.Changes[2]
	if len(m.Columns) != 2 || m.Columns[0] != (Column{"v", "y", "Y"}) || m.Columns[1].Name != "geometry" ||
		m.BBoxOld[0] != 0 || m.BBoxNew[0] != 1 {
		t.Errorf("modified %+v", m)
	}
	files := fmt.Sprint(f.Files)
	if !strings.Contains(files, "{a ") || len(f.Files) != 2 || f.Files[0].Added != 1 || f.Files[0].Modified != 1 || f.Files[0].MovedOut != 1 ||
		f.Files[1].Removed != 1 || f.Files[1].MovedIn != 1 || len(f.Duplicates) != 0 {
		t.Errorf("files %+v duplicates %+v", f.Files, f.Duplicates)
	}
}

// A key held in two files of one revision is a duplicate, and a warning.
func TestCompareDuplicates(t *testing.T) {
	f := Compare(Input{
		Old: []Table{keyed("a", "id", row(1, "x", 0))},
		New: []Table{keyed("a", "id", row(1, "x", 0)), keyed("b", "id", row(1, "x", 0))},
	})
	if len(f.Duplicates) != 1 || f.Duplicates[0].Key != "1" || fmt.Sprint(f.Duplicates[0].Paths) != "[a b]" || len(f.Warnings) != 1 {
		t.Errorf("duplicates %+v, warnings %q", f.Duplicates, f.Warnings)
	}
	if f.Totals != (Totals{Added: 1}) {
		t.Errorf("totals %+v", f.Totals)
	}
}

// Without a key a modified row is a removed one plus an added one, and
// an unchanged row that changed file is moved.
func TestCompareContent(t *testing.T) {
	content := func(path string, rows ...Row) Table {
		t := keyed(path, "", rows...)
		t.Key = KeyChoice{Source: KeyContent}
		return t
	}
	f := Compare(Input{
		Old: []Table{content("a", row(1, "x", 0), row(2, "y", 0))},
		New: []Table{content("a", row(1, "X", 0)), content("b", row(2, "y", 0))},
	})
	if f.Totals != (Totals{Added: 1, Removed: 1, Moved: 1}) {
		t.Errorf("totals %+v", f.Totals)
	}
	for _, ch := range f.Changes {
		if !strings.HasPrefix(ch.Key, "#") {
			t.Errorf("content key %q", ch.Key)
		}
	}
}

// A rewritten file's rows are compared with its pair's: no moves.
func TestCompareRewrite(t *testing.T) {
	f := Compare(Input{
		Old:     []Table{keyed("old", "id", row(1, "x", 0), row(2, "y", 0))},
		New:     []Table{keyed("new", "id", row(1, "x", 0), row(2, "Y", 0))},
		Renames: map[string]string{"new": "old"},
	})
	if f.Totals != (Totals{Modified: 1}) || len(f.Files) != 1 || f.Files[0].Path != "new" {
		t.Errorf("totals %+v files %+v", f.Totals, f.Files)
	}
}

// Thousands of changes: the JSON list stops at Limit and says so; the
// markdown lists MarkdownLimit per kind with the totals.
func TestLimits(t *testing.T) {
	var old, cur []Row
	for i := range 3000 {
		old = append(old, row(i, "x", 0))
		cur = append(cur, row(i, "y", 0))
	}
	f := Compare(Input{Old: []Table{keyed("a", "id", old...)}, New: []Table{keyed("a", "id", cur...)}, Limit: 1000})
	if f.Totals.Modified != 3000 || len(f.Changes) != 1000 || !f.Truncated || f.Changes[999].Key != "999" {
		t.Fatalf("totals %+v, %d listed, truncated %v", f.Totals, len(f.Changes), f.Truncated)
	}
	var b strings.Builder
	if err := Markdown(&b, f); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	if n := strings.Count(md, "| v: \"x\" → \"y\" |"); n != MarkdownLimit {
		t.Errorf("markdown lists %d rows, want %d:\n%s", n, MarkdownLimit, md)
	}
	if !strings.Contains(md, "#### modified (3000)") || !strings.Contains(md, "…and 2950 more.") {
		t.Errorf("markdown totals missing:\n%s", md)
	}
}

// FuzzParseWKB: no panic on any input, and what parses has a WKT and
// marshals to JSON.
func FuzzParseWKB(f *testing.F) {
	f.Add(wkbPoint(1, 2))
	f.Add([]byte{1, 3, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{1, 7, 0, 0, 0, 1, 0, 0, 0, 1, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := ParseWKB(b)
		if err != nil {
			return
		}
		_ = g.WKT()
		_ = g.BBox()
		if _, err := json.Marshal(g); err != nil {
			t.Fatal(err) // diff --json must never fail on a geometry
		}
	})
}
