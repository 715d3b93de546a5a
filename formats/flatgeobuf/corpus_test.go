package flatgeobuf

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/formats/formattest"
)

// corpusFGBs returns the corpus files named .fgb plus any other file that
// starts with the FlatGeobuf magic (fuzz crash files have no extension).
func corpusFGBs(t testing.TB) []formattest.File {
	t.Helper()
	var out []formattest.File
	for _, f := range formattest.Corpus(t) {
		if strings.HasSuffix(strings.ToLower(f.Name), ".fgb") || isMagic(f.Data) {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		t.Fatal("no FlatGeobuf file in the corpus")
	}
	return out
}

// gdalReads returns the corpus files GDAL reads completely: SOURCES.tsv
// says "full feature dump: OK", or, for a file SOURCES.tsv does not list,
// `ogrinfo -ro -al -q` succeeds without an ERROR line. The adapter must
// read every one of them natively; anything else may fall back.
func gdalReads(t testing.TB, files []formattest.File) map[string]bool {
	t.Helper()
	dir := formattest.CorpusDir(t)
	listed := map[string]string{}
	for name, row := range formattest.Sources(t, "gdal_verification") {
		listed[name] = row["gdal_verification"]
	}
	ok := map[string]bool{}
	for _, f := range files {
		v, in := listed[f.Name]
		if in {
			ok[f.Name] = strings.Contains(v, "full feature dump: OK")
			continue
		}
		out, err := exec.Command(formattest.RequireTool(t, "ogrinfo"), "-ro", "-al", "-q", filepath.Join(dir, f.Name)).CombinedOutput()
		ok[f.Name] = err == nil && !bytes.Contains(out, []byte("ERROR"))
	}
	return ok
}

func TestCorpus(t *testing.T) {
	files := corpusFGBs(t)
	native := gdalReads(t, files)
	n := 0
	for _, f := range files {
		if native[f.Name] {
			n++
		}
	}
	if n == 0 {
		t.Fatal("no corpus FlatGeobuf is marked readable by GDAL")
	}
	formattest.Run(t, Adapter{}, files, native)
	for _, f := range files {
		l, err := formattest.Layout(Adapter{}, f.Data)
		if err != nil {
			t.Logf("%s: generic (%v)", f.Name, err)
			continue
		}
		var b strings.Builder
		for _, s := range l.Summary {
			b.WriteString(" " + s.Name + "=" + s.Value)
		}
		t.Logf("%s: %d chunks, %d inline bytes;%s", f.Name, len(l.Chunks()), l.InlineBytes(), b.String())
	}
}

func TestCorpusDamaged(t *testing.T) {
	formattest.Damaged(t, Adapter{}, corpusFGBs(t))
}

// TestCorpusIndex: BuildIndex reproduces the stored index of the corpus
// files written by GDAL and the reference writers; the ones that differ
// are logged (their summary says "verbatim").
func TestCorpusIndex(t *testing.T) {
	match, total := 0, 0
	for _, c := range corpusFGBs(t) {
		f, err := parse(t.Context(), bytes.NewReader(c.Data), int64(len(c.Data)))
		if err != nil || f.indexLen == 0 {
			continue
		}
		total++
		got, err := BuildIndex(f.feats, f.h.nodeSize)
		if err != nil {
			t.Errorf("%s: %v", c.Name, err)
			continue
		}
		want := c.Data[f.indexOff : f.indexOff+f.indexLen]
		if bytes.Equal(got, want) {
			match++
			continue
		}
		t.Logf("%s: rebuilt index differs from the stored one (first differing node %d of %d)",
			c.Name, firstDiff(got, want)/nodeItemSize, len(want)/nodeItemSize)
	}
	t.Logf("BuildIndex equals the stored index in %d of %d indexed corpus files", match, total)
	if total > 0 && match == 0 {
		t.Error("BuildIndex matched no corpus index")
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestCorpusSummary pins the summary of well-known corpus files (when
// present) against their SOURCES.tsv descriptions.
func TestCorpusSummary(t *testing.T) {
	want := map[string]map[string]string{
		"flatgeobuf__flatgeobuf__test__data__countries.fgb": {
			"features": "179", "geometry_type": "MultiPolygon", "index": "node_size=16 derived", "crs": "EPSG:4326",
		},
		"flatgeobuf__flatgeobuf__test__data__heterogeneous.fgb": {"features": "3", "index": "none", "columns": "0"},
		"flatgeobuf__flatgeobuf__test__data__empty.fgb":         {"features": "0", "index": "none", "geometry_type": "Polygon"},
	}
	for _, c := range corpusFGBs(t) {
		w := want[c.Name]
		if w == nil {
			continue
		}
		l, err := formattest.Layout(Adapter{}, c.Data)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		for k, v := range w {
			if got := field(l, k); got != v {
				t.Errorf("%s: summary %s = %q, want %q", c.Name, k, got, v)
			}
		}
	}
}

func field(l *formats.Layout, name string) string {
	for _, f := range l.Summary {
		if f.Name == name {
			return f.Value
		}
	}
	return ""
}
