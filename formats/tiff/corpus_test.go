package tiff

import (
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/formats/formattest"
)

// corpusTIFFs returns the corpus files with a TIFF extension plus any other
// file that starts with a TIFF magic (fuzz crash files have no extension).
func corpusTIFFs(t testing.TB) []formattest.File {
	t.Helper()
	var out []formattest.File
	for _, f := range formattest.Corpus(t) {
		n := strings.ToLower(f.Name)
		ext := false
		for _, e := range []string{".tif", ".tiff", ".ovr", ".msk"} {
			ext = ext || strings.HasSuffix(n, e)
		}
		if ext || (Adapter{}).Detect(f.Data[:min(len(f.Data), formats.HeadSize)]) {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		t.Fatal("no TIFF in the corpus")
	}
	return out
}

// gdalReadable returns the corpus files that SOURCES.tsv says GDAL opens and
// reads without error: normal files the adapter must read natively.
func gdalReadable(t testing.TB) map[string]bool {
	t.Helper()
	ok := map[string]bool{}
	for name, row := range formattest.Sources(t, "gdal_verification") {
		v := row["gdal_verification"]
		ok[name] = strings.Contains(v, "read OK") && !strings.Contains(v, "READ ERRORS")
	}
	return ok
}

func TestCorpus(t *testing.T) {
	files := corpusTIFFs(t)
	ok := gdalReadable(t)
	native := map[string]bool{}
	for _, f := range files {
		if ok[f.Name] {
			native[f.Name] = true
		}
	}
	if len(native) < 10 {
		t.Fatalf("only %d GDAL-readable TIFFs found in the corpus", len(native))
	}
	formattest.Run(t, Adapter{}, files, native)
}

func TestCorpusDamaged(t *testing.T) {
	formattest.Damaged(t, Adapter{}, corpusTIFFs(t))
}
