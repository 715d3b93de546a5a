package tiff

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
)

// subIFDFile is a 64×64 8-bit tiled GeoTIFF (16×16 tiles) whose two
// reduced resolutions (32×32, 16×16) and a mask live in SubIFDs (tag
// tagSubIFDs) of IFD0, not in the main chain, as libtiff-based writers (DNG,
// some scientific and GIS tools) keep them. A second page in the main
// chain follows, so the walk must resume the main chain after them.
func subIFDFile(bo order, big bool) []byte {
	w := newBuilder(bo, big)
	typ := uint16(typeLong)
	if big {
		typ = typeLong8
	}
	tiles := func(n int, seed uint64) (offs, counts []uint64) {
		for i := 0; i < n; i++ {
			offs = append(offs, w.put(fill(256, seed*100+uint64(i))))
			counts = append(counts, 256)
		}
		return offs, counts
	}
	o1, c1 := tiles(4, 1)
	z1 := w.sub(append(tiled(32, 32, 16, 16, o1, c1), long(tagNewSubfileType, subfileReduced))...)
	o2, c2 := tiles(1, 2)
	z2 := w.sub(append(tiled(16, 16, 16, 16, o2, c2), long(tagNewSubfileType, subfileReduced))...)
	om, cm := tiles(16, 3)
	mask := w.sub(append(tiled(64, 64, 16, 16, om, cm), long(tagNewSubfileType, subfileMask))...)
	o0, c0 := tiles(16, 4)
	geo := []tag{
		dbl(tagModelPixelScale, 10, 10, 0),
		dbl(tagModelTiepoint, 0, 0, 0, 500000, 6000000, 0),
		short(tagGeoKeyDirectory, 1, 1, 0, 2, 1024, 0, 1, 1, 3072, 0, 1, 32633),
		{id: tagSubIFDs, typ: typ, v: []uint64{z1, z2, mask}},
	}
	w.ifd(tiled(64, 64, 16, 16, o0, c0, geo...)...)
	op, cp := tiles(1, 5)
	w.ifd(tiled(16, 16, 16, 16, op, cp)...)
	return w.b
}

// TestSubIFDs: tiles in SubIFDs are chunks keyed like overviews and masks
// in the main chain, and the file round-trips byte for byte.
func TestSubIFDs(t *testing.T) {
	for _, tc := range []struct {
		name string
		bo   order
		big  bool
	}{{"le", binary.LittleEndian, false}, {"be", binary.BigEndian, false}, {"le_big", binary.LittleEndian, true}} {
		t.Run(tc.name, func(t *testing.T) {
			data := subIFDFile(tc.bo, tc.big)
			l := layoutOf(t, data)
			keys := map[string]bool{}
			for _, s := range l.Chunks() {
				keys[s.Key] = true
			}
			for _, k := range []string{"z0/r3/c3", "z1/r1/c1", "z2/r0/c0", "mask/z0/r3/c3", "ifd4/z0/r0/c0"} {
				if !keys[k] {
					t.Errorf("no chunk %s in %d chunks", k, len(keys))
				}
			}
			if n := len(l.Chunks()); n != 16+4+1+16+1 {
				t.Errorf("%d chunks, want 38 (every tile one chunk)", n)
			}
			if v := field(l, "overviews"); v != "2" {
				t.Errorf("overviews %q, want 2", v)
			}
			formattest.Run(t, Adapter{}, []formattest.File{{Name: "subifd", Data: data}}, map[string]bool{"subifd": true})
		})
	}
}

// GDAL reads the hand-built file, with its two SubIFD overviews: a file a
// real reader accepts, so it must be chunked natively.
func TestSubIFDsGDAL(t *testing.T) {
	p := filepath.Join(t.TempDir(), "subifd.tif")
	if err := os.WriteFile(p, subIFDFile(binary.LittleEndian, false), 0o644); err != nil {
		t.Fatal(err)
	}
	gi := info(t, p)
	if gi.Size != [2]int{64, 64} || len(gi.Bands) != 1 {
		t.Fatalf("gdalinfo: size %v, %d bands", gi.Size, len(gi.Bands))
	}
	if n := len(gi.Bands[0].Overviews); n != 2 {
		t.Errorf("GDAL sees %d overviews, want 2", n)
	}
}

// SubIFD walks are bounded like the main chain: a SubIFD pointing back at
// its parent is a loop, refused with its reason.
func TestSubIFDLoop(t *testing.T) {
	w := newBuilder(binary.LittleEndian, false)
	o := w.put(fill(256, 1))
	// The parent is written next, at the aligned end of the file.
	at := uint64(len(w.b))
	w.ifd(tiled(16, 16, 16, 16, []uint64{o}, []uint64{256}, long(tagSubIFDs, at))...)
	_, err := formattest.Layout(Adapter{}, w.b)
	if err == nil || !strings.Contains(err.Error(), "loops") {
		t.Fatalf("error %v, want a loop", err)
	}
	formattest.Fuzz(t, Adapter{}, w.b)
}
