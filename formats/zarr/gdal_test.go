package zarr

import (
	"encoding/json"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
)

// gdalSource makes a small two-band UTM GeoTIFF with gdal_create.
func gdalSource(t *testing.T, dir string) string {
	t.Helper()
	src := filepath.Join(dir, "src.tif")
	formattest.Run1(t, "gdal_create", "-q", "-of", "GTiff", "-outsize", "70", "50", "-bands", "2", "-ot", "Int16",
		"-burn", "3", "-a_srs", "EPSG:32631", "-a_ullr", "500000", "4600000", "500700", "4599500", src)
	return src
}

// mdimArrays is what gdalmdiminfo says of a store's arrays.
type mdimArrays map[string]struct {
	Dims  []string `json:"dimensions"`
	Size  []int64  `json:"dimension_size"`
	Block []int64  `json:"block_size"`
}

// TestGDALStores scans v2 stores that GDAL 3.6's Zarr driver writes with
// several block sizes, codecs, separators and chunk layouts: every file is
// understood, and each array's shape, chunk shape and dimension names are
// what gdalmdiminfo reads from the same store.
func TestGDALStores(t *testing.T) {
	dir := t.TempDir()
	src := gdalSource(t, dir)
	variants := []struct {
		name string
		co   []string
		sep  byte
	}{
		{"zlib-16x32", []string{"BLOCKSIZE=16,32", "COMPRESS=ZLIB"}, '.'},
		{"zstd-20x20-slash", []string{"BLOCKSIZE=20,20", "COMPRESS=ZSTD", "DIM_SEPARATOR=/"}, '/'},
		{"blosc-F", []string{"BLOCKSIZE=8,64", "COMPRESS=BLOSC", "CHUNK_MEMORY_LAYOUT=F"}, '.'},
		{"none-whole", []string{"COMPRESS=NONE"}, '.'},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			out := filepath.Join(dir, v.name+".zarr")
			args := []string{"-q", "-of", "Zarr", "-co", "FORMAT=ZARR_V2"}
			for _, co := range v.co {
				args = append(args, "-co", co)
			}
			formattest.Run1(t, "gdal_translate", append(args, src, out)...)
			st, files := checkStore(t, out)
			if st.Version != 2 || st.Unsupported != "" {
				t.Fatalf("store %+v", st)
			}
			if o := others(files); len(o) > 0 {
				t.Errorf("files not understood: %q", o)
			}
			var info struct {
				Arrays mdimArrays `json:"arrays"`
			}
			if err := json.Unmarshal([]byte(formattest.Run1(t, "gdalmdiminfo", out)), &info); err != nil {
				t.Fatal(err)
			}
			checkConsolidated(t, files, true)
			chunks := roles(files)[RoleChunk]
			checkAgainstGDAL(t, st, info.Arrays, v.sep, chunks)
		})
	}
}

func checkAgainstGDAL(t *testing.T, st *Store, arrays mdimArrays, sep byte, chunks int) {
	t.Helper()
	seen, want := 0, 0
	for _, n := range st.Nodes {
		if n.Array == nil {
			continue
		}
		a := n.Array
		g, ok := arrays[a.Path]
		if !ok {
			t.Errorf("array %q unknown to gdalmdiminfo", a.Path)
			continue
		}
		seen++
		var dims []string
		for _, d := range g.Dims {
			dims = append(dims, path.Base(d))
		}
		if !slices.Equal(a.Shape, g.Size) || !slices.Equal(a.ChunkShape, g.Block) || !slices.Equal(a.DimNames, dims) {
			t.Errorf("array %q: shape %v chunks %v dims %q; gdal: %v %v %q", a.Path, a.Shape, a.ChunkShape, a.DimNames, g.Size, g.Block, dims)
		}
		if a.Rank() > 1 && a.Keys.Separator != sep { // GDAL leaves it out for 1-D arrays
			t.Errorf("array %q: separator %q, want %q", a.Path, a.Keys.Separator, sep)
		}
		n := int64(1)
		for _, x := range a.Grid() {
			n *= x
		}
		want += int(n)
	}
	if seen != len(arrays) {
		t.Errorf("scan found %d arrays, gdalmdiminfo %d", seen, len(arrays))
	}
	if chunks != want {
		t.Errorf("%d chunk files, the grids hold %d", chunks, want)
	}
}

// TestGDALDraftV3: GDAL 3.6's FORMAT=ZARR_V3 writes the pre-release
// layout; the scan says so and keeps every file as a plain one.
func TestGDALDraftV3(t *testing.T) {
	dir := t.TempDir()
	src := gdalSource(t, dir)
	out := filepath.Join(dir, "draft.zarr")
	formattest.Run1(t, "gdal_translate", "-q", "-of", "Zarr", "-co", "FORMAT=ZARR_V3", "-co", "BLOCKSIZE=16,32", src, out)
	st, files := checkStore(t, out)
	if !strings.Contains(st.Unsupported, "pre-release") {
		t.Fatalf("unsupported %q", st.Unsupported)
	}
	n := roles(files)
	if n[RoleOther] != len(files) || len(files) < 10 {
		t.Errorf("roles %v of %d files", n, len(files))
	}
	for _, f := range files {
		if f.Reason != st.Unsupported {
			t.Errorf("%s: reason %q", f.Path, f.Reason)
		}
	}
}
