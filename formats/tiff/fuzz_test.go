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
