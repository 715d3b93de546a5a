package tiff

import (
	"bufio"
	"os"
	"path/filepath"
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
	f, err := os.Open(filepath.Join(formattest.CorpusDir(t), "SOURCES.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ok := map[string]bool{}
	col := -1
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		cells := strings.Split(sc.Text(), "\t")
		if col < 0 {
			for i, c := range cells {
				if c == "gdal_verification" {
					col = i
				}
			}
			if col < 0 {
				t.Fatal("SOURCES.tsv has no gdal_verification column")
			}
			continue
		}
		if len(cells) > col && len(cells) > 1 && strings.Contains(cells[col], "read OK") &&
			!strings.Contains(cells[col], "READ ERRORS") {
			ok[cells[1]] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
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
