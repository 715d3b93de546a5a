package zarr

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
)

// corpusStores returns the store directories of the shared corpus.
func corpusStores(t testing.TB) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(formattest.CorpusDir(t), "zarr", "*.zarr"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no zarr stores in the corpus (%v)", err)
	}
	return dirs
}

// subStores finds the stores inside dir when dir itself is not one (a
// directory holding an array node but no root metadata): the topmost
// directories that Detect accepts.
func subStores(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if Detect(os.DirFS(p)) {
			out = append(out, p)
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCorpus scans every third-party store of the corpus: every file is
// accounted for (none is left "other": the corpus holds only files Zarr
// defines), chunk paths and keys round trip, and the figures match what
// each store's metadata says it holds.
func TestCorpus(t *testing.T) {
	type want struct{ nodes, chunks int }
	wants := map[string]want{
		"zarrs__zarrs__array_write_read.zarr":          {3, 3},
		"zarrs__zarrs__hierarchy.zarr":                 {5, 0},
		"zarrs__zarrs__v3__cities.zarr":                {1, 48},
		"zarrs__zarrs__v3__array_optional.zarr":        {1, 3},
		"zarrs__zarrs__v3__array_optional_nested.zarr": {1, 3},
	}
	for _, dir := range corpusStores(t) {
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			stores := []string{dir}
			if !Detect(os.DirFS(dir)) {
				stores = subStores(t, dir)
				if len(stores) != 1 {
					t.Fatalf("%s is not a store and holds %d", dir, len(stores))
				}
			}
			st, files := checkStore(t, stores[0])
			if st.Unsupported != "" {
				t.Fatalf("unsupported: %s", st.Unsupported)
			}
			if o := others(files); len(o) > 0 {
				t.Errorf("files not understood:\n%s", strings.Join(o, "\n"))
			}
			w, ok := wants[name]
			if !ok {
				w = want{1, 4} // the 10×10 arrays of 5×5 chunks
			}
			n := roles(files)
			if len(st.Nodes) != w.nodes || n[RoleChunk] != w.chunks {
				t.Errorf("%d nodes, %d chunks; want %d, %d", len(st.Nodes), n[RoleChunk], w.nodes, w.chunks)
			}
			wantVersion := 3
			if strings.Contains(name, "__v2__") {
				wantVersion = 2
			}
			if st.Version != wantVersion {
				t.Errorf("version %d, want %d", st.Version, wantVersion)
			}
		})
	}
}

// TestCorpusMetadata pins what the parsers read from a few corpus
// documents.
func TestCorpusMetadata(t *testing.T) {
	base := filepath.Join(formattest.CorpusDir(t), "zarr")
	read := func(p string) []byte {
		data, err := os.ReadFile(filepath.Join(base, p))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	a, err := ParseZArray("x/.zarray", read("zarrs__zarrs__v2__array_blosc_F.zarr/.zarray"))
	if err != nil {
		t.Fatal(err)
	}
	if a.Path != "x" || a.Order != 'F' || a.Compressor == nil || a.Compressor.Name != "blosc" || a.Keys != (KeyEncoding{Separator: '.'}) {
		t.Errorf("v2 blosc F: %+v", a)
	}
	a, g, err := ParseZarrJSON("a/baz/zarr.json", read("zarrs__zarrs__hierarchy.zarr/a/baz/zarr.json"))
	if err != nil || g != nil {
		t.Fatal(err)
	}
	if a.Path != "a/baz" || len(a.Codecs) != 2 || a.Codecs[1].Name != "gzip" || a.DimNames[1] != "columns" ||
		a.Keys != (KeyEncoding{Default: true, Separator: '/'}) || string(a.FillValue) != `"NaN"` {
		t.Errorf("v3 a/baz: %+v", a)
	}
	if g := a.Grid(); g[0] != 10 || g[1] != 10 {
		t.Errorf("grid %v", g)
	}
	a, _, err = ParseZarrJSON("zarr.json", read("zarrs__zarrs__v3__array_blosc_transpose.zarr/zarr.json"))
	if err != nil || a.Keys != (KeyEncoding{Separator: '.'}) {
		t.Errorf("v3 with v2 keys: %+v, %v", a, err)
	}
}
