package tiff

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/formats/formattest"
)

// raster describes a synthetic georeferenced source image (UTM 33N, 10 m
// pixels, origin 500000/6000000) written as raw ENVI so tests need no
// Python: gdal_create makes the header, Go writes the samples.
type raster struct {
	w, h, bands int
	// edit, when non-empty, adds 7 to every sample of the window
	// [x0, x1)×[y0, y1), all bands.
	edit [4]int
	// zeroTop zeroes the top half (nodata for sparse tests).
	zeroTop bool
}

const (
	originX, originY, pixel = 500000.0, 6000000.0, 10.0
)

// sample is smooth terrain plus a little deterministic noise, so tiles
// compress like real data rather than to nothing.
func sample(x, y, b int) uint16 {
	n := uint32(x*73856093) ^ uint32(y*19349663) ^ uint32(b*83492791)
	n ^= n >> 13
	n *= 0x5bd1e995
	n ^= n >> 15
	return uint16(1000 + x/3 + y/5 + 200*b + int(n&1))
}

// write makes dir/name.img (+ .hdr) and returns the .img path.
func (r raster) write(t testing.TB, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name+".img")
	ulx, uly := originX, originY
	lrx, lry := originX+pixel*float64(r.w), originY-pixel*float64(r.h)
	formattest.Run1(t, "gdal_create", "-q", "-of", "ENVI", "-outsize", itoa(r.w), itoa(r.h),
		"-bands", itoa(r.bands), "-ot", "UInt16", "-a_srs", "EPSG:32633",
		"-a_ullr", ftoa(ulx), ftoa(uly), ftoa(lrx), ftoa(lry), p)
	buf := make([]byte, 2*r.w*r.h*r.bands)
	i := 0
	for b := 0; b < r.bands; b++ {
		for y := 0; y < r.h; y++ {
			for x := 0; x < r.w; x++ {
				v := sample(x, y, b)
				if r.edit != [4]int{} && x >= r.edit[0] && x < r.edit[2] && y >= r.edit[1] && y < r.edit[3] {
					v += 7
				}
				if r.zeroTop && y < r.h/2 {
					v = 0
				}
				binary.LittleEndian.PutUint16(buf[i:], v)
				i += 2
			}
		}
	}
	if err := os.WriteFile(p, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func itoa(i int) string     { return strconv.Itoa(i) }
func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// translate runs gdal_translate src → dir/name with args and returns the
// output's bytes.
func translate(t testing.TB, src, dst string, args ...string) []byte {
	t.Helper()
	formattest.Run1(t, "gdal_translate", append(append([]string{"-q"}, args...), src, dst)...)
	b, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// gdalInfo is the part of `gdalinfo -json` the tests compare against.
type gdalInfo struct {
	Size              [2]int `json:"size"`
	CornerCoordinates struct {
		UpperLeft  [2]float64 `json:"upperLeft"`
		LowerLeft  [2]float64 `json:"lowerLeft"`
		UpperRight [2]float64 `json:"upperRight"`
		LowerRight [2]float64 `json:"lowerRight"`
	} `json:"cornerCoordinates"`
	Bands []struct {
		Block     [2]int `json:"block"`
		Overviews []struct {
			Size [2]int `json:"size"`
		} `json:"overviews"`
	} `json:"bands"`
}

func info(t testing.TB, path string) gdalInfo {
	t.Helper()
	// stdout only: gdalinfo prints non-fatal errors (corner reprojection)
	// on stderr.
	out, err := exec.Command(formattest.RequireTool(t, "gdalinfo"), "-json", path).Output()
	if err != nil {
		t.Fatalf("gdalinfo -json %s: %v", path, err)
	}
	var gi gdalInfo
	if err := json.Unmarshal(out, &gi); err != nil {
		t.Fatalf("gdalinfo -json %s: %v", path, err)
	}
	return gi
}

// layoutOf reads data with the adapter and requires a valid native layout.
func layoutOf(t testing.TB, data []byte) *formats.Layout {
	t.Helper()
	l, err := formattest.Layout(Adapter{}, data)
	if err != nil {
		t.Fatalf("adapter refused the file: %v", err)
	}
	if err := formats.Check(l, int64(len(data))); err != nil {
		t.Fatal(err)
	}
	return l
}

func field(l *formats.Layout, name string) string {
	for _, f := range l.Summary {
		if f.Name == name {
			return f.Value
		}
	}
	return ""
}
