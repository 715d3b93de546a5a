package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
)

func buildTool(t *testing.T, pkg string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), filepath.Base(pkg))
	if out, err := exec.Command("go", "build", "-o", p, pkg).CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, out)
	}
	return p
}

func runTool(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

// Issue 5: 200k points written by ogr2ogr with a spatial index; ~60 points
// in a small box get a longer name. The second commit stores ≤ 8% of the
// file (the index is rebuilt at checkout, not stored); both versions come
// back byte for byte and GDAL reads them.
func TestFlatGeobufEditCostsFeatures(t *testing.T) {
	if testing.Short() {
		t.Skip("200k-point FlatGeobuf")
	}
	formattest.RequireTool(t, "ogr2ogr")
	mk := buildTool(t, "../../scripts/mkdemo")
	r := newRunner(t)
	gen := t.TempDir()
	csv := filepath.Join(gen, "p.csv")
	fgb := func(edit ...string) {
		runTool(t, mk, append([]string{"points", "-o", csv, "-n", "200000"}, edit...)...)
		formattest.Run1(t, "ogr2ogr", "-f", "FlatGeobuf", "-lco", "SPATIAL_INDEX=YES", "-oo", "X_POSSIBLE_NAMES=lon", "-oo", "Y_POSSIBLE_NAMES=lat",
			"-oo", "KEEP_GEOM_COLUMNS=NO", "-a_srs", "EPSG:4326", "-nln", "stations", r.path("stations.fgb"), csv)
	}
	fgb()
	v1 := r.read("stations.fgb")
	r.cv("init")
	r.cv("track", "*.fgb")
	var c1 commitResult
	r.jsonOf(&c1, "commit", "-m", "v1")
	if c1.Files[0].Format != "flatgeobuf" {
		t.Fatalf("format %q (fallback %q)", c1.Files[0].Format, c1.Files[0].Fallback)
	}
	fgb("-edit-box", "9950,49950,10050,50050")
	v2 := r.read("stations.fgb")
	var c2 commitResult
	r.jsonOf(&c2, "commit", "-m", "v2")
	pct := 100 * float64(c2.BytesUploaded) / float64(len(v2))
	t.Logf("v2 uploaded %d bytes = %.2f%% of the %d-byte file", c2.BytesUploaded, pct, len(v2))
	if pct > 8 {
		t.Fatalf("edit uploaded %.2f%% of the file (> 8%%)", pct)
	}
	var ls lsChunks
	r.jsonOf(&ls, "ls-chunks", "stations.fgb")
	if ls.Summary["features"] != "200000" || !strings.Contains(ls.Summary["index"], "derived") {
		t.Fatalf("summary %v", ls.Summary)
	}
	for _, c := range ls.Chunks {
		if c.BBox == nil {
			t.Fatalf("block %s has no bbox", c.Key)
		}
	}
	for rev, want := range map[string][]byte{"HEAD~1": v1, "HEAD": v2} {
		r.cv("checkout", rev, "--", "stations.fgb")
		if !bytes.Equal(r.read("stations.fgb"), want) {
			t.Fatalf("checkout %s is not byte-identical", rev)
		}
		if out := formattest.Run1(t, "ogrinfo", "-so", "-al", r.path("stations.fgb")); !strings.Contains(out, "Feature Count: 200000") {
			t.Fatalf("ogrinfo on checkout %s:\n%s", rev, out)
		}
	}
	if got := r.cv("cat", "HEAD~1:stations.fgb"); got != string(v1) {
		t.Fatal("cat of v1 (index regenerated) differs")
	}
}

// Issue 4: a GeoParquet of 200k points in 20 row groups; editing 100 values
// in one row group stores about that column chunk; appending a row group
// stores the new row group; every version checks out byte for byte.
func TestGeoParquetEditAndAppend(t *testing.T) {
	gen := buildTool(t, "../../scripts/mkgeoparquet")
	r := newRunner(t)
	mk := func(extra ...string) []byte {
		runTool(t, gen, append([]string{"-o", r.path("lake/part-0.parquet"), "-rows", "200000", "-rowgroups", "20", "-seed", "1"}, extra...)...)
		return r.read("lake/part-0.parquet")
	}
	r.write("lake/README", []byte("partitioned lake\n"))
	v1 := mk()
	r.cv("init")
	r.cv("track", "lake/**/*.parquet")
	r.cv("commit", "-m", "v1")
	var l1 lsChunks
	r.jsonOf(&l1, "ls-chunks", "lake/part-0.parquet")
	if l1.Format != "parquet" || len(l1.Chunks) < 100 {
		t.Fatalf("format %s, %d chunks", l1.Format, len(l1.Chunks))
	}
	for _, c := range l1.Chunks {
		if c.BBox == nil {
			t.Fatalf("chunk %s has no row-group bbox", c.Key)
		}
	}
	v2 := mk("-edit-rows", "100", "-edit-rg", "7")
	var c2 commitResult
	r.jsonOf(&c2, "commit", "-m", "edit 100 values")
	var l2 lsChunks
	r.jsonOf(&l2, "ls-chunks", "lake/part-0.parquet")
	var valueChunk, chunkBytes int64
	for _, c := range l2.Chunks {
		chunkBytes += c.Size
		if strings.HasPrefix(c.Key, "rg7/value/") || c.Key == "rg7/value" {
			valueChunk += c.Size
		}
	}
	skeleton := l2.Size - chunkBytes
	limit := (valueChunk + skeleton) * 3 / 2
	t.Logf("edit: uploaded %d bytes; rg7 value column %d + skeleton %d; limit %d", c2.BytesUploaded, valueChunk, skeleton, limit)
	if valueChunk == 0 || c2.BytesUploaded > limit {
		t.Fatalf("edit uploaded %d bytes (limit %d)", c2.BytesUploaded, limit)
	}
	v3 := mk("-edit-rows", "100", "-edit-rg", "7", "-append-rg")
	var c3 commitResult
	r.jsonOf(&c3, "commit", "-m", "append a row group")
	var l3 lsChunks
	r.jsonOf(&l3, "ls-chunks", "lake/part-0.parquet")
	var newRG, all int64
	for _, c := range l3.Chunks {
		all += c.Size
		if strings.HasPrefix(c.Key, "rg20/") {
			newRG += c.Size
		}
	}
	t.Logf("append: uploaded %d bytes; new row group %d + skeleton %d", c3.BytesUploaded, newRG, l3.Size-all)
	if newRG == 0 || c3.BytesUploaded > newRG+(l3.Size-all)+4096 {
		t.Fatalf("append uploaded %d bytes, new row group is %d", c3.BytesUploaded, newRG)
	}
	for rev, want := range map[string][]byte{"HEAD~2": v1, "HEAD~1": v2, "HEAD": v3} {
		r.cv("checkout", rev, "--", "lake/part-0.parquet")
		if !bytes.Equal(r.read("lake/part-0.parquet"), want) {
			t.Fatalf("checkout %s is not byte-identical", rev)
		}
	}
}

// A partition written with another schema is flagged at commit.
func TestParquetSchemaWarnings(t *testing.T) {
	gen := buildTool(t, "../../scripts/mkgeoparquet")
	r := newRunner(t)
	r.write("lake/README", []byte("x\n"))
	runTool(t, gen, "-o", r.path("lake/a.parquet"), "-rows", "2000", "-rowgroups", "2", "-seed", "1")
	runTool(t, gen, "-o", r.path("lake/b.parquet"), "-rows", "2000", "-rowgroups", "2", "-seed", "2")
	r.cv("init")
	r.cv("track", "lake/*.parquet")
	if res := r.run(binary, "commit", "-m", "two partitions"); res.code != 0 || strings.Contains(res.stderr, "differs from sibling") {
		t.Fatalf("same-schema partitions: exit %d\n%s", res.code, res.stderr)
	}
	// A different writer: parquet-go's small test file has another schema.
	for _, f := range formattest.Corpus(t, "alltypes_plain.parquet") {
		r.write("lake/c.parquet", f.Data)
	}
	res := r.run(binary, "commit", "-m", "third partition")
	if res.code != 0 || !strings.Contains(res.stderr, "differs from sibling lake/a.parquet") {
		t.Fatalf("incompatible partition not flagged: exit %d\n%s", res.code, res.stderr)
	}
	// A partition with no CRS says so, rather than an empty value.
	if !strings.Contains(res.stderr, "crs (none) differs from sibling lake/a.parquet") {
		t.Errorf("a missing CRS is not named:\n%s", res.stderr)
	}
}
