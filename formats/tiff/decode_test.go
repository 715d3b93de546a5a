package tiff

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
)

// TestDecodeGDAL decodes every full-resolution block of the TIFF flavours
// GDAL writes and requires each sample to equal the generated source's
// (sample), so codec, predictor, byte order, sample type, planar and
// strip handling are each checked against an independent writer.
func TestDecodeGDAL(t *testing.T) {
	dir := t.TempDir()
	src := raster{w: 300, h: 200, bands: 3}.write(t, dir, "src")
	tiled := []string{"-of", "GTiff", "-co", "TILED=YES", "-co", "BLOCKXSIZE=128", "-co", "BLOCKYSIZE=64"}
	tests := []struct {
		name string
		args []string
		clip float64 // Byte output saturates at 255
	}{
		{"none_uint16", tiled, 0},
		{"deflate_pred2_uint16", append(tiled, "-co", "COMPRESS=DEFLATE", "-co", "PREDICTOR=2"), 0},
		{"lzw_pred2_int16", append(tiled, "-ot", "Int16", "-co", "COMPRESS=LZW", "-co", "PREDICTOR=2"), 0},
		{"lzw_pred2_uint32", append(tiled, "-ot", "UInt32", "-co", "COMPRESS=LZW", "-co", "PREDICTOR=2"), 0},
		{"zstd_int32", append(tiled, "-ot", "Int32", "-co", "COMPRESS=ZSTD"), 0},
		{"zstd_pred3_float32", append(tiled, "-ot", "Float32", "-co", "COMPRESS=ZSTD", "-co", "PREDICTOR=3"), 0},
		{"deflate_pred3_float64", append(tiled, "-ot", "Float64", "-co", "COMPRESS=DEFLATE", "-co", "PREDICTOR=3"), 0},
		{"none_float64", append(tiled, "-ot", "Float64"), 0},
		{"packbits_uint8", append(tiled, "-ot", "Byte", "-co", "COMPRESS=PACKBITS"), 255},
		{"planar_lzw", append(tiled, "-co", "INTERLEAVE=BAND", "-co", "COMPRESS=LZW", "-co", "PREDICTOR=2"), 0},
		{"bigendian_pred2", append(tiled, "-co", "ENDIANNESS=BIG", "-co", "COMPRESS=DEFLATE", "-co", "PREDICTOR=2"), 0},
		{"bigendian_pred3", append(tiled, "-ot", "Float32", "-co", "ENDIANNESS=BIG", "-co", "COMPRESS=LZW", "-co", "PREDICTOR=3"), 0},
		{"strips_deflate", []string{"-of", "GTiff", "-co", "COMPRESS=DEFLATE", "-co", "PREDICTOR=2", "-co", "BLOCKYSIZE=30"}, 0},
		{"cog_deflate", []string{"-of", "COG", "-co", "BLOCKSIZE=128", "-co", "COMPRESS=DEFLATE", "-co", "PREDICTOR=YES"}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := translate(t, src, filepath.Join(dir, tc.name+".tif"), tc.args...)
			ra, err := OpenRaster(context.Background(), bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			im := ra.ims["z0/"]
			for r := 0; r < int(im.down); r++ {
				for c := 0; c < int(im.across); c++ {
					key := fmt.Sprintf("z0/s%d", r)
					if im.tiled {
						key = fmt.Sprintf("z0/r%d/c%d", r, c)
					}
					bl, err := ra.Block(key, 0)
					if err != nil {
						t.Fatal(err)
					}
					checkBlock(t, key, bl, c*int(im.bw), r*int(im.bh), tc.clip)
				}
			}
		})
	}
}

func checkBlock(t *testing.T, key string, bl *Block, x0, y0 int, clip float64) {
	t.Helper()
	if len(bl.Bands) != 3 {
		t.Fatalf("%s: %d bands, want 3", key, len(bl.Bands))
	}
	for b, band := range bl.Bands {
		for y := range bl.ValidH {
			for x := range bl.ValidW {
				want := float64(sample(x0+x, y0+y, b))
				if clip > 0 {
					want = min(want, clip)
				}
				if got := band[y*bl.W+x]; got != want {
					t.Fatalf("%s band %d pixel (%d,%d) = %v, want %v", key, b+1, x, y, got, want)
				}
			}
		}
	}
}

// TestDecodeUnsupported requires a codec this package cannot decode to be
// named in an UnsupportedError, not garbage.
func TestDecodeUnsupported(t *testing.T) {
	dir := t.TempDir()
	src := raster{w: 256, h: 256, bands: 3}.write(t, dir, "src")
	data := translate(t, src, filepath.Join(dir, "jpeg.tif"), "-of", "GTiff", "-ot", "Byte", "-co", "TILED=YES", "-co", "COMPRESS=JPEG")
	ra, err := OpenRaster(context.Background(), bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	_, err = ra.Block("z0/r0/c0", 0)
	var ue *UnsupportedError
	if !errors.As(err, &ue) || ue.Error() != "unsupported codec jpeg" || !errors.Is(err, ErrUnsupported) {
		t.Fatalf("err = %v, want unsupported codec jpeg", err)
	}
}

// TestOverview requires the preview level to be the coarsest overview at
// least minSide wide, assembled from its tiles, and full resolution when
// asked for more than any overview has.
func TestOverview(t *testing.T) {
	dir := t.TempDir()
	src := raster{w: 1000, h: 700, bands: 3}.write(t, dir, "src")
	data := translate(t, src, filepath.Join(dir, "cog.tif"), "-of", "COG", "-co", "BLOCKSIZE=128", "-co", "COMPRESS=DEFLATE")
	ra, err := OpenRaster(context.Background(), bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	bl, level, err := ra.Overview(200, 0)
	if err != nil {
		t.Fatal(err)
	}
	if level != 2 || bl.W != 250 || bl.H != 175 {
		t.Fatalf("level %d %dx%d, want level 2 250x175", level, bl.W, bl.H)
	}
	if bl, level, err = ra.Overview(2000, 0); err != nil || level != 0 || bl.W != 1000 {
		t.Fatalf("level %d, err %v, want full resolution", level, err)
	}
	checkBlock(t, "z0", bl, 0, 0, 0)
}
