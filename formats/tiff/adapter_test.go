package tiff

import (
	"encoding/binary"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/formats/formattest"
	"github.com/chunkvc/chunkvc/geom"
)

func fill(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// twoByTwo builds a 40×40 image of four 20×20 tiles (the last one sparse)
// and a 20×20 overview, georeferenced with tiepoint + scale.
func twoByTwo(bo order, big bool) []byte {
	w := newBuilder(bo, big)
	var offs, counts []uint64
	for i := 0; i < 3; i++ {
		offs = append(offs, w.put(fill(400, uint64(i))))
		counts = append(counts, 400)
	}
	offs, counts = append(offs, 0), append(counts, 0)
	ovr := w.put(fill(100, 9))
	geo := []tag{
		dbl(tagModelPixelScale, 10, 5, 0),
		dbl(tagModelTiepoint, 0, 0, 0, 1000, 2000, 0),
		short(tagGeoKeyDirectory, 1, 1, 0, 2, 1024, 0, 1, 1, 3072, 0, 1, 32633),
	}
	w.ifd(tiled(40, 40, 20, 20, offs, counts, geo...)...)
	w.ifd(append(tiled(20, 20, 16, 16, []uint64{ovr, 0, 0, 0}, []uint64{100, 0, 0, 0}), long(tagNewSubfileType, 1))...)
	return w.b
}

func TestSynthetic(t *testing.T) {
	for _, tc := range []struct {
		name string
		bo   order
		big  bool
	}{{"le", binary.LittleEndian, false}, {"be", binary.BigEndian, false}, {"le_big", binary.LittleEndian, true}, {"be_big", binary.BigEndian, true}} {
		t.Run(tc.name, func(t *testing.T) {
			data := twoByTwo(tc.bo, tc.big)
			if !(Adapter{}).Detect(data[:8]) {
				t.Fatal("Detect refused the file")
			}
			l := layoutOf(t, data)
			got := map[string]geom.BBox{}
			for _, s := range l.Chunks() {
				if s.BBox == nil {
					t.Fatalf("%s has no bbox", s.Key)
				}
				got[s.Key] = *s.BBox
			}
			want := map[string]geom.BBox{
				"z0/r0/c0": {MinX: 1000, MinY: 1900, MaxX: 1200, MaxY: 2000},
				"z0/r0/c1": {MinX: 1200, MinY: 1900, MaxX: 1400, MaxY: 2000},
				"z0/r1/c0": {MinX: 1000, MinY: 1800, MaxX: 1200, MaxY: 1900},
				// 20 px overview of a 40 px image: 16 px tile = 32 px = 320 m.
				"z1/r0/c0": {MinX: 1000, MinY: 1840, MaxX: 1320, MaxY: 2000},
			}
			if len(got) != len(want) {
				t.Errorf("chunks %v, want %v", got, want)
			}
			for k, b := range want {
				if got[k] != b {
					t.Errorf("%s bbox %v, want %v", k, got[k], b)
				}
			}
			wantSum := "cog=no byteorder=%s bigtiff=%s width=40 height=40 bands=1 dtype=uint8 tile=20x20 interleave=pixel compression=none predictor=1 overviews=1 masks=0 sparse=4 crs=EPSG:32633 bbox=1000,1800,1400,2000"
			bo, bt := "little", "no"
			if tc.bo.String() == binary.BigEndian.String() {
				bo = "big"
			}
			if tc.big {
				bt = "yes"
			}
			wantSum = strings.Replace(strings.Replace(wantSum, "%s", bo, 1), "%s", bt, 1)
			var parts []string
			for _, f := range l.Summary {
				parts = append(parts, f.Name+"="+f.Value)
			}
			if s := strings.Join(parts, " "); s != wantSum {
				t.Errorf("summary\n got %s\nwant %s", s, wantSum)
			}
			if p := Profile(l); p != "tile=20x20 compression=none predictor=1 interleave=pixel overviews=1" {
				t.Errorf("profile %q", p)
			}
			formattest.Run(t, Adapter{}, []formattest.File{{Name: tc.name, Data: data}}, map[string]bool{tc.name: true})
			formattest.Damaged(t, Adapter{}, []formattest.File{{Name: tc.name, Data: data}})
		})
	}
}

func TestDetect(t *testing.T) {
	for head, want := range map[string]bool{
		"II*\x00": true, "MM\x00*": true, "II+\x00": true, "MM\x00+": true,
		"II*": false, "MM*\x00": false, "PK\x03\x04": false, "": false, "II\x00*": false,
	} {
		if got := (Adapter{}).Detect([]byte(head)); got != want {
			t.Errorf("Detect(%q) = %v, want %v", head, got, want)
		}
	}
}

// TestRefuses: inputs the adapter must hand to the generic fallback.
func TestRefuses(t *testing.T) {
	le := binary.LittleEndian
	cases := map[string]func() []byte{
		"partial overlap": func() []byte {
			w := newBuilder(le, false)
			o := w.put(fill(1000, 1))
			w.ifd(tiled(32, 16, 16, 16, []uint64{o, o + 100}, []uint64{400, 400})...)
			return w.b
		},
		"contained block": func() []byte {
			w := newBuilder(le, false)
			o := w.put(fill(1000, 1))
			w.ifd(tiled(32, 16, 16, 16, []uint64{o, o}, []uint64{400, 100})...)
			return w.b
		},
		"block past EOF": func() []byte {
			w := newBuilder(le, false)
			o := w.put(fill(100, 1))
			w.ifd(tiled(16, 16, 16, 16, []uint64{o}, []uint64{1 << 30})...)
			return w.b
		},
		"offset overflow": func() []byte {
			w := newBuilder(le, true)
			w.ifd(tiled(16, 16, 16, 16, []uint64{1<<64 - 1}, []uint64{2})...)
			return w.b
		},
		"ifd loop": func() []byte {
			w := newBuilder(le, false)
			o := w.put(fill(100, 1))
			at := w.ifd(tiled(16, 16, 16, 16, []uint64{o}, []uint64{100})...)
			le.PutUint32(w.b[w.next:], uint32(at))
			return w.b
		},
		"zero tile width": func() []byte {
			w := newBuilder(le, false)
			o := w.put(fill(100, 1))
			w.ifd(tiled(16, 16, 0, 16, []uint64{o}, []uint64{100})...)
			return w.b
		},
		"zero rows per strip": func() []byte {
			w := newBuilder(le, false)
			o := w.put(fill(100, 1))
			w.ifd(long(tagImageWidth, 10), long(tagImageLength, 10), long(tagRowsPerStrip, 0),
				long(tagStripOffsets, o), long(tagStripByteCounts, 100))
			return w.b
		},
		"wrong block count": func() []byte {
			w := newBuilder(le, false)
			o := w.put(fill(100, 1))
			w.ifd(tiled(64, 64, 16, 16, []uint64{o}, []uint64{100})...)
			return w.b
		},
		"no IFD": func() []byte { return newBuilder(le, false).b },
		"huge dimensions": func() []byte {
			w := newBuilder(le, false)
			w.ifd(tiled(1<<32-1, 1<<32-1, 1, 1, []uint64{8}, []uint64{1})...)
			return w.b
		},
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			data := mk()
			if l, err := formattest.Layout(Adapter{}, data); err == nil {
				t.Fatalf("accepted: %d segments", len(l.Segments))
			}
			formattest.Fuzz(t, Adapter{}, data)
		})
	}
}

// TestDuplicates: GDAL writes identical empty tiles once and points several
// tiles at them; that is one chunk plus aliases, also for split tiles.
func TestDuplicates(t *testing.T) {
	w := newBuilder(binary.LittleEndian, false)
	a, b := w.put(fill(500, 1)), w.put(fill(SplitMin+300<<10, 2))
	w.ifd(tiled(64, 16, 16, 16, []uint64{a, a, b, b}, []uint64{500, 500, SplitMin + 300<<10, SplitMin + 300<<10})...)
	l := layoutOf(t, w.b)
	var keys []string
	for _, s := range l.Chunks() {
		if !strings.HasSuffix(s.Key, "@") || len(keys) == 0 || keys[len(keys)-1] != s.Key {
			keys = append(keys, s.Key)
		}
	}
	if strings.Join(keys, " ") != "z0/r0/c0 z0/r0/c2@" {
		t.Errorf("chunk keys %v", keys)
	}
	split := len(l.Chunks()) - 1
	if split < 2 {
		t.Errorf("a %d-byte tile was not split (%d pieces)", SplitMin+300<<10, split)
	}
	if len(l.Aliases) != 1+split || l.Aliases[0].Key != "z0/r0/c1" || l.Aliases[1].Key != "z0/r0/c3@" {
		t.Errorf("aliases %v", l.Aliases)
	}
	formattest.Run(t, Adapter{}, []formattest.File{{Name: "dup", Data: w.b}}, map[string]bool{"dup": true})
}

// TestGaps: unreferenced bytes (dead tiles after an in-place edit) over
// GapMin become content-keyed chunks; short ones stay inline.
func TestGaps(t *testing.T) {
	w := newBuilder(binary.LittleEndian, false)
	w.put(fill(100, 7)) // short dead run: inline
	a := w.put(fill(400, 1))
	w.put(fill(70<<10, 8)) // a dead 70 KiB tile
	b := w.put(fill(400, 2))
	w.ifd(tiled(32, 16, 16, 16, []uint64{a, b}, []uint64{400, 400})...)
	w.b = append(w.b, fill(3000, 9)...) // trailing short junk: inline
	l := layoutOf(t, w.b)
	var gaps, inline int64
	for _, s := range l.Segments {
		switch {
		case strings.HasPrefix(s.Key, "gap/0@"):
			gaps += s.Len
		case !s.IsChunk():
			inline += s.Len
		}
	}
	if gaps != 70<<10 {
		t.Errorf("gap chunks hold %d bytes, want %d", gaps, 70<<10)
	}
	if inline > 4000 {
		t.Errorf("%d inline bytes", inline)
	}
	formattest.Run(t, Adapter{}, []formattest.File{{Name: "gaps", Data: w.b}}, map[string]bool{"gaps": true})
}

// TestGeoTransforms: ModelTransformation with rotation (all four corners),
// PixelIsPoint's half-pixel shift, and a file without georeferencing.
func TestGeoTransforms(t *testing.T) {
	mk := func(extra ...tag) *formats.Layout {
		w := newBuilder(binary.BigEndian, false)
		o := w.put(fill(100, 1))
		w.ifd(tiled(10, 10, 16, 16, []uint64{o}, []uint64{100}, extra...)...)
		return layoutOf(t, w.b)
	}
	// 90° rotation: x = 100 + py·2, y = 50 + px·3.
	l := mk(dbl(tagModelTransform, 0, 2, 0, 100, 3, 0, 0, 50, 0, 0, 0, 0, 0, 0, 0, 1))
	if b := l.Chunks()[0].BBox; b == nil || *b != (geom.BBox{MinX: 100, MinY: 50, MaxX: 120, MaxY: 80}) {
		t.Errorf("rotated bbox %v", b)
	}
	l = mk(dbl(tagModelPixelScale, 2, 2, 0), dbl(tagModelTiepoint, 0, 0, 0, 100, 200, 0),
		short(tagGeoKeyDirectory, 1, 1, 0, 2, 1025, 0, 1, 2, 2048, 0, 1, 4326))
	if b := l.Chunks()[0].BBox; b == nil || *b != (geom.BBox{MinX: 99, MinY: 181, MaxX: 119, MaxY: 201}) {
		t.Errorf("PixelIsPoint bbox %v", b)
	}
	if c := field(l, "crs"); c != "EPSG:4326" {
		t.Errorf("crs %q", c)
	}
	l = mk()
	if b := l.Chunks()[0].BBox; b != nil || field(l, "bbox") != "" || field(l, "crs") != "" {
		t.Errorf("ungeoreferenced file has bbox %v, summary %v", b, l.Summary)
	}
}

// TestBudget: many IFDs pointing at one shared offset array must not
// multiply work and memory; the element budget refuses them.
func TestBudget(t *testing.T) {
	w := newBuilder(binary.LittleEndian, false)
	const n = 1 << 16 // 64 Ki zero entries = sparse blocks
	arr := w.put(make([]byte, 4*n))
	for i := 0; i < 1000; i++ {
		w.ifd(long(tagImageWidth, 16*n), long(tagImageLength, 16), long(tagTileWidth, 16), long(tagTileLength, 16),
			tag{id: tagTileOffsets, typ: typeLong, n: n, at: arr}, tag{id: tagTileByteCounts, typ: typeLong, n: n, at: arr})
	}
	_, err := formattest.Layout(Adapter{}, w.b)
	if err == nil || !strings.Contains(err.Error(), "budget") && !strings.Contains(err.Error(), "too many") {
		t.Fatalf("1000 IFDs × %d shared entries in a %d-byte file: err = %v", n, len(w.b), err)
	}
}
