package parquet

import (
	"encoding/binary"
	"math"
	"testing"
	"time"
)

// wkbB builds WKB: byte order, type word, then u32 counts and float64
// coordinates in that order (ints are counts, floats coordinates, []byte
// nested geometries).
func wkbB(le bool, typ uint32, parts ...any) []byte {
	var o binary.AppendByteOrder = binary.BigEndian
	b := []byte{0}
	if le {
		o, b[0] = binary.LittleEndian, 1
	}
	b = o.AppendUint32(b, typ)
	for _, p := range parts {
		switch v := p.(type) {
		case int:
			b = o.AppendUint32(b, uint32(v))
		case float64:
			b = o.AppendUint64(b, math.Float64bits(v))
		case []byte:
			b = append(b, v...)
		}
	}
	return b
}

func TestWKBExtent(t *testing.T) {
	nan := math.NaN()
	pt := func(x, y float64) []byte { return wkbB(true, 1, x, y) }
	ring := []any{4, 0.0, 0.0, 10.0, 0.0, 10.0, 10.0, 0.0, 0.0}
	for _, tc := range []struct {
		name string
		b    []byte
		want [4]float64 // all zero with n == 0: no coordinates
		n    int64
	}{
		{"point LE", pt(1, 2), [4]float64{1, 2, 1, 2}, 1},
		{"point BE", wkbB(false, 1, -3.5, 4.0), [4]float64{-3.5, 4, -3.5, 4}, 1},
		{"point Z ISO", wkbB(true, 1001, 1.0, 2.0, 99.0), [4]float64{1, 2, 1, 2}, 1},
		{"point M ISO", wkbB(true, 2001, 1.0, 2.0, 99.0), [4]float64{1, 2, 1, 2}, 1},
		{"point ZM ISO", wkbB(true, 3001, 1.0, 2.0, 99.0, 98.0), [4]float64{1, 2, 1, 2}, 1},
		{"point Z EWKB", wkbB(true, 1|ewkbZ, 1.0, 2.0, 99.0), [4]float64{1, 2, 1, 2}, 1},
		{"point ZM EWKB SRID", wkbB(false, 1|ewkbZ|ewkbM|ewkbSRID, 4326, 1.0, 2.0, 99.0, 98.0), [4]float64{1, 2, 1, 2}, 1},
		{"empty point", pt(nan, nan), [4]float64{}, 0},
		{"linestring", wkbB(true, 2, 3, 0.0, 5.0, -1.0, 2.0, 7.0, 3.0), [4]float64{-1, 2, 7, 5}, 3},
		{"linestring Z", wkbB(false, 1002, 2, 0.0, 5.0, 1e9, -1.0, 2.0, -1e9), [4]float64{-1, 2, 0, 5}, 2},
		{"empty linestring", wkbB(true, 2, 0), [4]float64{}, 0},
		{"polygon", wkbB(true, 3, append([]any{2}, append(ring, 4, 2.0, 2.0, 3.0, 2.0, 3.0, 3.0, 2.0, 2.0)...)...), [4]float64{0, 0, 10, 10}, 8},
		{"triangle", wkbB(true, 17, append([]any{1}, ring...)...), [4]float64{0, 0, 10, 10}, 4},
		{"multipoint mixed order", wkbB(true, 4, 3, pt(5, 5), wkbB(false, 1, -5.0, 1.0), pt(nan, nan)), [4]float64{-5, 1, 5, 5}, 2},
		{"multilinestring", wkbB(true, 5, 2, wkbB(true, 2, 1, 1.0, 1.0), wkbB(true, 2, 1, 2.0, -2.0)), [4]float64{1, -2, 2, 1}, 2},
		{"multipolygon ZM", wkbB(true, 3006, 1, wkbB(true, 3003, 1, 1, 7.0, 8.0, 0.0, 0.0)), [4]float64{7, 8, 7, 8}, 1},
		{"collection nested", wkbB(true, 7, 2, pt(1, 1), wkbB(true, 7, 1, wkbB(true, 4, 1, pt(-1, 3)))), [4]float64{-1, 1, 1, 3}, 2},
		{"empty collection", wkbB(true, 7, 0), [4]float64{}, 0},
		{"TIN", wkbB(true, 16, 1, wkbB(true, 17, append([]any{1}, ring...)...)), [4]float64{0, 0, 10, 10}, 4},
		{"infinite coordinate", wkbB(true, 2, 2, math.Inf(1), 0.0, 1.0, 1.0), [4]float64{1, 1, 1, 1}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e extent
			n, err := wkbExtent(tc.b, &e)
			if err != nil || n != len(tc.b) {
				t.Fatalf("read %d of %d bytes: %v", n, len(tc.b), err)
			}
			if e.n != tc.n {
				t.Fatalf("%d coordinates, want %d", e.n, tc.n)
			}
			if tc.n == 0 {
				if e.bbox() != nil {
					t.Fatalf("bbox %v for no coordinates", e.bbox())
				}
				return
			}
			if got := e.bbox().Array(); got != tc.want {
				t.Fatalf("bbox %v, want %v", got, tc.want)
			}
			// Every proper prefix is an error, never a panic.
			for i := range len(tc.b) {
				var e extent
				if _, err := wkbExtent(tc.b[:i], &e); err == nil {
					t.Fatalf("prefix of %d bytes accepted", i)
				}
			}
		})
	}
}

func TestWKBRefusals(t *testing.T) {
	deep := wkbB(true, 1, 0.0, 0.0)
	for range wkbMaxDepth + 2 {
		deep = wkbB(true, 7, 1, deep)
	}
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"bad byte order", []byte{2, 1, 0, 0, 0}},
		{"unknown type", wkbB(true, 8)},
		{"unknown dimension", wkbB(true, 4001, 0.0, 0.0)},
		{"ISO and EWKB dims", wkbB(true, 3001|ewkbZ, 0.0, 0.0, 0.0, 0.0, 0.0)},
		{"linestring of 2^32-1 points", wkbB(true, 2, -1, 1.0, 2.0)},
		{"polygon of 2^32-1 rings", wkbB(true, 3, -1, 0)},
		{"collection of 2^32-1", wkbB(true, 7, -1, wkbB(true, 7, 0))},
		{"ring of 2^31 points", wkbB(false, 3, 1, 1<<31)},
		{"nested too deep", deep},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			var e extent
			if n, err := wkbExtent(tc.b, &e); err == nil {
				t.Fatalf("accepted (%d bytes)", n)
			}
			if d := time.Since(start); d > 10*time.Millisecond {
				t.Errorf("took %v", d)
			}
		})
	}
}

// FuzzWKB: no panic, never past the input, and a bbox (when any) is valid.
func FuzzWKB(f *testing.F) {
	f.Add(wkbB(true, 1, 1.0, 2.0))
	f.Add(wkbB(false, 1|ewkbZ|ewkbSRID, 4326, 1.0, 2.0, 3.0))
	f.Add(wkbB(true, 3003, 1, 2, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0))
	f.Add(wkbB(true, 7, 2, wkbB(true, 2, 1, 1.0, 1.0), wkbB(false, 6, 1, wkbB(false, 3, 1, 1, 5.0, 5.0))))
	f.Add(wkbB(true, 16, 1, wkbB(true, 17, 1, 1, 5.0, 5.0)))
	f.Fuzz(func(t *testing.T, b []byte) {
		var e extent
		n, err := wkbExtent(b, &e)
		if n < 0 || n > len(b) {
			t.Fatalf("read %d of %d bytes", n, len(b))
		}
		if err == nil && e.n > 0 && e.bbox() == nil {
			t.Fatalf("invalid extent %+v", e)
		}
	})
}
