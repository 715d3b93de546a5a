package georef

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
)

// TestGDALZarr: chunk boxes of Zarr v2 stores GDAL's driver wrote from
// GeoTIFFs equal the pixel-grid math of gdalinfo's geoTransform, in a
// projected CRS and a geographic one, with edge chunks cut short.
func TestGDALZarr(t *testing.T) {
	for _, tc := range []struct {
		srs, ullr, size, block, crs string
	}{
		{"EPSG:32633", "500000 4600000 504000 4597000", "40 30", "16,12", "EPSG:32633"},
		{"EPSG:4326", "-10.5 60.25 9.5 40.25", "80 40", "7,9", "EPSG:4326"},
		{"EPSG:3857", "-20000 30000 10000 0", "30 30", "30,30", "EPSG:3857"},
	} {
		t.Run(tc.srs, func(t *testing.T) {
			dir := t.TempDir()
			tif := filepath.Join(dir, "in.tif")
			args := []string{"-of", "GTiff", "-bands", "1", "-ot", "Int16", "-a_srs", tc.srs, "-burn", "3", "-outsize"}
			args = append(append(args, strings.Fields(tc.size)...), "-a_ullr")
			args = append(append(args, strings.Fields(tc.ullr)...), tif)
			formattest.Run1(t, "gdal_create", args...)
			store := filepath.Join(dir, "cube.zarr")
			formattest.Run1(t, "gdal_translate", "-q", "-of", "Zarr", "-co", "FORMAT=ZARR_V2",
				"-co", "BLOCKSIZE="+tc.block, "-co", "COMPRESS=BLOSC", tif, store)
			var info struct {
				GeoTransform []float64 `json:"geoTransform"`
				Size         []int     `json:"size"`
			}
			if err := json.Unmarshal([]byte(formattest.Run1(t, "gdalinfo", "-json", tif)), &info); err != nil {
				t.Fatal(err)
			}
			g, a, err := locateDir(t, store, "cube")
			if err != nil {
				t.Fatal(err)
			}
			if g.CRS != tc.crs || g.WKT == "" || g.XDim != 1 || g.YDim != 0 {
				t.Errorf("CRS %q (WKT %d bytes), dims x=%d y=%d; want %s, x=1 y=0", g.CRS, len(g.WKT), g.XDim, g.YDim, tc.crs)
			}
			gt := info.GeoTransform
			w, h := info.Size[0], info.Size[1]
			ky, kx := a.ChunkShape[0], a.ChunkShape[1]
			n := 0
			for r := 0; r*ky < h; r++ {
				for c := 0; c*kx < w; c++ {
					got, ok := g.Box([]int{r, c})
					x0, x1 := gt[0]+float64(c*kx)*gt[1], gt[0]+float64(min((c+1)*kx, w))*gt[1]
					y0, y1 := gt[3]+float64(min((r+1)*ky, h))*gt[5], gt[3]+float64(r*ky)*gt[5]
					if !ok || !near(got.MinX, x0) || !near(got.MaxX, x1) || !near(got.MinY, y0) || !near(got.MaxY, y1) {
						t.Errorf("chunk %d.%d: %v, want %v,%v,%v,%v", r, c, got, x0, y0, x1, y1)
					}
					n++
				}
			}
			if _, ok := g.Box([]int{(h + ky - 1) / ky, 0}); ok {
				t.Error("a chunk past the grid has a box")
			}
			t.Logf("%s: %d chunk boxes match gdalinfo's grid", tc.srs, n)
		})
	}
}
