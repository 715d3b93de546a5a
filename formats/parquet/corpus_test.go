package parquet

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	pq "github.com/parquet-go/parquet-go"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/formats/formattest"
)

// corpusParquet returns the corpus Parquet files.
func corpusParquet(t testing.TB) []formattest.File {
	t.Helper()
	files := formattest.Corpus(t, ".parquet", ".parq")
	if len(files) == 0 {
		t.Fatal("no Parquet file in the corpus")
	}
	return files
}

// footerOK returns the corpus files that SOURCES.tsv describes as Parquet
// with a footer that its independent decoder read ("footer OK").
func footerOK(t testing.TB) map[string]bool {
	t.Helper()
	ok := map[string]bool{}
	for name, row := range formattest.Sources(t, "format", "structure_check") {
		ok[name] = strings.Contains(row["format"], "Parquet") && strings.HasPrefix(row["structure_check"], "footer OK")
	}
	return ok
}

// openPQ opens data with parquet-go (page index included), or returns an
// error; a panic counts as an error.
func openPQ(data []byte) (f *pq.File, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("parquet-go panicked: %v", p)
		}
	}()
	return pq.OpenFile(bytes.NewReader(data), int64(len(data)))
}

// mustBeNative: SOURCES.tsv says the footer is fine, the file is not one
// of upstream's deliberately broken inputs, and parquet-go opens it.
func mustBeNative(t testing.TB, files []formattest.File) map[string]bool {
	t.Helper()
	ok := footerOK(t)
	native := map[string]bool{}
	for _, f := range files {
		if !ok[f.Name] || strings.Contains(f.Name, "bad_data") {
			continue
		}
		if _, err := openPQ(f.Data); err != nil {
			t.Logf("%s: parquet-go cannot open it (%v); fallback allowed", f.Name, err)
			continue
		}
		native[f.Name] = true
	}
	if len(native) < 10 {
		t.Fatalf("only %d well-formed Parquet files found in the corpus", len(native))
	}
	return native
}

func TestCorpus(t *testing.T) {
	files := corpusParquet(t)
	formattest.Run(t, Adapter{}, files, mustBeNative(t, files))
}

func TestCorpusDamaged(t *testing.T) {
	formattest.Damaged(t, Adapter{}, corpusParquet(t))
}

// TestCorpusAgreesWithParquetGo checks every native layout against
// parquet-go's own reading of the file: each column chunk's bytes are the
// chunks keyed rg<i>/<path>, each ColumnIndex is its own chunk, and every
// page the OffsetIndex lists is exactly one page chunk.
func TestCorpusAgreesWithParquetGo(t *testing.T) {
	files := corpusParquet(t)
	native := mustBeNative(t, files)
	checked := 0
	for _, f := range files {
		if !native[f.Name] {
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			l, err := formattest.Layout(Adapter{}, f.Data)
			if err != nil {
				t.Fatal(err)
			}
			pf, err := openPQ(f.Data)
			if err != nil {
				t.Fatal(err)
			}
			checked++
			type ext struct{ lo, hi, n int64 }
			byCol := map[string]*ext{}
			seg := map[[2]int64]string{}
			for _, s := range l.Chunks() {
				seg[[2]int64{s.Off, s.Len}] = s.Key
				k := strings.TrimSuffix(s.Key, "@")
				if i := strings.LastIndex(k, "/p"); i > 0 && strings.Count(k, "/") == 2 {
					k = k[:i]
				}
				if e := byCol[k]; e != nil {
					e.lo, e.hi, e.n = min(e.lo, s.Off), max(e.hi, s.Off+s.Len), e.n+s.Len
				} else {
					byCol[k] = &ext{s.Off, s.Off + s.Len, s.Len}
				}
			}
			md := pf.Metadata()
			oi := pf.OffsetIndexes()
			keys := newKeyer()
			ncol := 0
			for i, rg := range md.RowGroups {
				ncol = len(rg.Columns)
				for j, cc := range rg.Columns {
					m := cc.MetaData
					path := make([][]byte, len(m.PathInSchema))
					for x, p := range m.PathInSchema {
						path[x] = []byte(p)
					}
					key := fmt.Sprintf("rg%d/%s", i, keys.path(path))
					start := m.DataPageOffset
					if m.DictionaryPageOffset > 0 && m.DictionaryPageOffset < start {
						start = m.DictionaryPageOffset
					}
					e := byCol[key]
					if m.TotalCompressedSize > 0 && (e == nil || e.lo != start || e.hi != start+m.TotalCompressedSize || e.n != m.TotalCompressedSize) {
						t.Errorf("%s: chunks %+v, parquet-go says [%d, +%d)", key, e, start, m.TotalCompressedSize)
					}
					if cc.ColumnIndexLength > 0 {
						if got := seg[[2]int64{cc.ColumnIndexOffset, int64(cc.ColumnIndexLength)}]; got != key+"/ci" {
							t.Errorf("%s: column index is chunk %q", key, got)
						}
					}
					if x := i*len(rg.Columns) + j; x < len(oi) {
						for _, pl := range oi[x].PageLocations {
							got := seg[[2]int64{pl.Offset, int64(pl.CompressedPageSize)}]
							if !strings.HasPrefix(got, key+"/p") {
								t.Errorf("%s: page at %d+%d is chunk %q", key, pl.Offset, pl.CompressedPageSize, got)
							}
						}
					}
				}
			}
			if sv := summaryValue(l, "rows"); sv != fmt.Sprint(md.NumRows) {
				t.Errorf("summary rows %s, parquet-go %d", sv, md.NumRows)
			}
			if len(md.RowGroups) > 0 && summaryValue(l, "columns") != fmt.Sprint(ncol) {
				t.Errorf("summary columns %s, parquet-go %d", summaryValue(l, "columns"), ncol)
			}
		})
	}
	if checked == 0 {
		t.Fatal("nothing checked")
	}
}

func summaryValue(l *formats.Layout, name string) string {
	for _, f := range l.Summary {
		if f.Name == name {
			return f.Value
		}
	}
	return ""
}
