package tiff

import (
	"bytes"
	"context"
	"encoding/binary"
	"path/filepath"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
)

// FuzzLayout: no panic, no invalid layout on any input. Seeds: the corpus
// TIFFs (also extension-less fuzz crash files) and the synthetic builds,
// SubIFDs included.
func FuzzLayout(f *testing.F) {
	formattest.Seeds(f, ".tif", ".tiff", ".ovr", ".msk")
	for _, c := range corpusTIFFs(f) {
		f.Add(c.Data)
	}
	f.Add(twoByTwo(binary.LittleEndian, false))
	f.Add(twoByTwo(binary.BigEndian, true))
	f.Add(subIFDFile(binary.LittleEndian, false))
	f.Add(subIFDFile(binary.BigEndian, true))
	f.Fuzz(func(t *testing.T, data []byte) {
		formattest.Fuzz(t, Adapter{}, data)
	})
}

// BenchmarkLayout enumerates a 2048×2048×3 UInt16 COG (85 tiles + 340 for
// a 4096² one would scale linearly); MB/s is file bytes per second, i.e.
// enumeration speed per GB of raster.
func BenchmarkLayout(b *testing.B) {
	dir := b.TempDir()
	src := raster{w: 2048, h: 2048, bands: 3}.write(b, dir, "src")
	data := translate(b, src, filepath.Join(dir, "cog.tif"), "-of", "COG", "-co", "BLOCKSIZE=256",
		"-co", "COMPRESS=DEFLATE", "-co", "PREDICTOR=YES", "-co", "LEVEL=1")
	r := bytes.NewReader(data)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		if _, err := (Adapter{}).Layout(context.Background(), r, int64(len(data))); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzBlock: decoding any block, and the preview, of any input that
// opens never panics. Images with blocks over 2^16 samples are skipped
// to keep executions fast (maxDecode bounds them in real use).
func FuzzBlock(f *testing.F) {
	for _, c := range corpusTIFFs(f) {
		f.Add(c.Data)
	}
	f.Add(twoByTwo(binary.LittleEndian, false))
	f.Add(twoByTwo(binary.BigEndian, true))
	f.Fuzz(func(t *testing.T, data []byte) {
		ra, err := OpenRaster(context.Background(), bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		small := true
		for _, im := range ra.ims {
			if im.bw*im.bh*im.spp > 1<<16 || im.w*im.h*im.spp > 1<<20 {
				small = false
				continue
			}
			for i := range min(uint64(4), im.across*im.down) {
				k := Key{IFD: -1, Level: -1, Tiled: im.tiled, Row: int(i / im.across), Col: int(i % im.across), Plane: -1}
				if pk, ok := ParseKey(im.prefix + "r0/c0"); ok {
					k.IFD, k.Mask, k.Level = pk.IFD, pk.Mask, pk.Level
				}
				if !im.tiled {
					k.Row, k.Col = int(i), 0
					if i >= im.down {
						break
					}
				}
				_, _ = ra.Block(k.String(), 0)
			}
		}
		if small {
			_, _, _ = ra.Overview(8, 0)
		}
	})
}
