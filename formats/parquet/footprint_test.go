package parquet

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/formats/formattest"
	"github.com/chunkvc/chunkvc/formats/parquet/pqgen"
	"github.com/chunkvc/chunkvc/geom"
)

func genFile(t testing.TB, c pqgen.Config) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := pqgen.Write(&b, c); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func layoutWith(t testing.TB, a Adapter, data []byte) *formats.Layout {
	t.Helper()
	l, err := a.Layout(context.Background(), bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if err := formats.Check(l, int64(len(data))); err != nil {
		t.Fatal(err)
	}
	return l
}

// checkRowGroupBBoxes: every chunk of row group k carries want[k].
func checkRowGroupBBoxes(t *testing.T, l *formats.Layout, want []geom.BBox) {
	t.Helper()
	seen := make([]int, len(want))
	for _, s := range l.Chunks() {
		var k int
		if _, err := fmt.Sscanf(s.Key, "rg%d/", &k); err != nil {
			continue
		}
		if k >= len(want) || s.BBox == nil || *s.BBox != want[k] {
			t.Fatalf("chunk %s bbox %v, want %v", s.Key, s.BBox, want[min(k, len(want)-1)])
		}
		seen[k]++
	}
	for k, n := range seen {
		if n == 0 {
			t.Errorf("row group %d has no chunk", k)
		}
	}
}

func TestDecodedFootprints(t *testing.T) {
	base := pqgen.Config{Rows: 20000, RowGroups: 4, Seed: 3, NoCovering: true}
	want := func(c pqgen.Config) []geom.BBox { return pqgen.RowGroupBBoxes(pqgen.Generate(c), c.PerGroup()) }
	cache := NewFootprintCache(64)
	a := Adapter{Footprints: cache}
	data := genFile(t, base)
	if bytes.Contains(data, []byte("xmin")) {
		t.Fatal("NoCovering file mentions the covering")
	}
	start := time.Now()
	checkRowGroupBBoxes(t, layoutWith(t, a, data), want(base))
	t.Logf("first enumeration (4 row groups of %d points decoded): %v", base.PerGroup(), time.Since(start))
	if h, m := cache.Stats(); h != 0 || m != 4 {
		t.Fatalf("first enumeration: %d hits, %d misses; want 0, 4", h, m)
	}

	// Same file again: nothing decoded.
	checkRowGroupBBoxes(t, layoutWith(t, a, data), want(base))
	if h, m := cache.Stats(); h != 4 || m != 4 {
		t.Fatalf("second enumeration: %d hits, %d misses; want 4, 4", h, m)
	}

	// Value column of row group 2 edited: the geometry chunks are
	// unchanged, nothing is decoded.
	ed := base
	ed.EditRows, ed.EditRG = 100, 2
	checkRowGroupBBoxes(t, layoutWith(t, a, genFile(t, ed)), want(ed))
	if h, m := cache.Stats(); h != 8 || m != 4 {
		t.Fatalf("value edit: %d hits, %d misses; want 8, 4", h, m)
	}

	// Geometry of row group 1 edited too: only that row group is decoded.
	ed.EditRG, ed.EditGeometry = 1, true
	w := want(ed)
	if w[1] == want(base)[1] {
		t.Fatal("edit did not move row group 1's extent")
	}
	checkRowGroupBBoxes(t, layoutWith(t, a, genFile(t, ed)), w)
	if h, m := cache.Stats(); h != 11 || m != 5 {
		t.Fatalf("geometry edit: %d hits, %d misses; want 11, 5", h, m)
	}

	// Deterministic: a cold cache gives the same layout.
	cold := layoutWith(t, Adapter{Footprints: NewFootprintCache(1)}, data)
	warm := layoutWith(t, a, data)
	if len(cold.Segments) != len(warm.Segments) || fmt.Sprint(cold.Summary) != fmt.Sprint(warm.Summary) {
		t.Fatal("cold and warm cache layouts differ")
	}
	for i, s := range cold.Segments {
		w := warm.Segments[i]
		if s.Off != w.Off || s.Len != w.Len || s.Key != w.Key || (s.BBox == nil) != (w.BBox == nil) || s.BBox != nil && *s.BBox != *w.BBox {
			t.Fatalf("segment %d: cold %+v, warm %+v", i, s, w)
		}
	}
}

// TestCoveringPreferred: with the bbox covering present nothing is decoded.
func TestCoveringPreferred(t *testing.T) {
	c := pqgen.Config{Rows: 3000, RowGroups: 3, Seed: 7}
	cache := NewFootprintCache(8)
	checkRowGroupBBoxes(t, layoutWith(t, Adapter{Footprints: cache}, small()), pqgen.RowGroupBBoxes(pqgen.Generate(c), c.PerGroup()))
	if h, m := cache.Stats(); h != 0 || m != 0 || cache.Len() != 0 {
		t.Fatalf("covering file: %d hits, %d misses, %d cached", h, m, cache.Len())
	}
}

func TestFootprintCacheLRU(t *testing.T) {
	c := NewFootprintCache(2)
	k := func(i byte) footprintKey { return footprintKey{chunk: [32]byte{i}} }
	b := &geom.BBox{MaxX: 1, MaxY: 1}
	c.put(k(1), footprint{bbox: b})
	c.put(k(2), footprint{why: "bad"})
	c.get(k(1)) // 1 is now the most recent
	c.put(k(3), footprint{bbox: b})
	if _, ok := c.get(k(2)); ok {
		t.Fatal("least recently used entry kept")
	}
	if got, ok := c.get(k(1)); !ok || got.bbox != b {
		t.Fatal("recent entry lost")
	}
	if c.Len() != 2 {
		t.Fatalf("%d entries", c.Len())
	}
}

// TestCorpusDecodedFootprints: corpus GeoParquet (WKB) files whose row
// groups have no statistics get decoded row-group footprints inside the
// file's geo bbox.
func TestCorpusDecodedFootprints(t *testing.T) {
	decoded := 0
	for _, f := range corpusParquet(t) {
		footer, _, err := readFooter(bytes.NewReader(f.Data), int64(len(f.Data)))
		if err != nil {
			continue
		}
		m, err := decodeFooter(footer)
		if err != nil {
			continue
		}
		g := parseGeo(m)
		if !g.ok || !strings.EqualFold(g.encoding, "WKB") {
			continue
		}
		cache := NewFootprintCache(64)
		l, err := formattest.Layout(Adapter{Footprints: cache}, f.Data)
		if err != nil {
			t.Errorf("%s: %v", f.Name, err)
			continue
		}
		_, misses := cache.Stats()
		var boxes int
		for _, s := range l.Chunks() {
			if s.BBox == nil || !strings.HasPrefix(s.Key, "rg") || g.fileBBox == nil {
				continue
			}
			boxes++
			b, fb := *s.BBox, *g.fileBBox
			const eps = 1e-9
			if b.MinX < fb.MinX-eps || b.MinY < fb.MinY-eps || b.MaxX > fb.MaxX+eps || b.MaxY > fb.MaxY+eps {
				t.Errorf("%s: chunk %s bbox %v outside the file bbox %v", f.Name, s.Key, b, fb)
			}
		}
		var own int
		for i := range m.rowGroups {
			if i < len(g.decoded) && g.decoded[i] != nil {
				own++
			}
		}
		t.Logf("%s: %d row groups, %d decoded, %d chunks with a bbox", f.Name, len(m.rowGroups), misses, boxes)
		decoded += int(misses)

		// Cross-check: with the statistics hidden, the decoded extent of
		// each row group lies inside (or equals) its statistics bbox.
		stats := make([]*geom.BBox, len(m.rowGroups))
		for i := range m.rowGroups {
			stats[i] = g.statsBBox(&m.rowGroups[i])
			for j := range m.rowGroups[i].cols {
				m.rowGroups[i].cols[j].geoBBox = nil
			}
		}
		g.covering = [4][]string{}
		g.decoded = nil
		_, dataEnd, _ := readFooter(bytes.NewReader(f.Data), int64(len(f.Data)))
		if err := (Adapter{Footprints: NewFootprintCache(64)}).decodeFootprints(context.Background(), bytes.NewReader(f.Data), int64(len(f.Data)), m, g, dataEnd); err != nil {
			t.Errorf("%s: %v", f.Name, err)
		}
		for i, sb := range stats {
			if sb == nil || i >= len(g.decoded) {
				continue
			}
			d := g.decoded[i]
			if d == nil {
				t.Errorf("%s: row group %d not decoded (codec %s)", f.Name, i, codecName(m.rowGroups[i].cols[0].codec))
				continue
			}
			if d.MinX < sb.MinX || d.MinY < sb.MinY || d.MaxX > sb.MaxX || d.MaxY > sb.MaxY {
				t.Errorf("%s: row group %d decoded %v outside its statistics %v", f.Name, i, *d, *sb)
			}
			t.Logf("%s: rg%d decoded %v, statistics %v", f.Name, i, *d, *sb)
			decoded++
		}
	}
	if decoded == 0 {
		t.Fatal("no corpus row group was decoded")
	}
}

// BenchmarkDecodeFootprints enumerates a 200k-point, 20-row-group file
// without the covering and with a cold cache: every row group is decoded.
func BenchmarkDecodeFootprints(b *testing.B) {
	data := genFile(b, pqgen.Config{Rows: 200000, RowGroups: 20, Seed: 1, NoCovering: true})
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		a := Adapter{Footprints: NewFootprintCache(64)}
		if _, err := a.Layout(context.Background(), bytes.NewReader(data), int64(len(data))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWarmFootprints is the same with a warm cache: hashing only.
func BenchmarkWarmFootprints(b *testing.B) {
	data := genFile(b, pqgen.Config{Rows: 200000, RowGroups: 20, Seed: 1, NoCovering: true})
	a := Adapter{Footprints: NewFootprintCache(64)}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := a.Layout(context.Background(), bytes.NewReader(data), int64(len(data))); err != nil {
			b.Fatal(err)
		}
	}
}

// Row groups whose geometry column is Brotli or LZ4_RAW compressed get
// their own decoded footprints, not the file bbox (issue 33).
func TestDecodedFootprintsCodecs(t *testing.T) {
	for _, codec := range []string{"brotli", "lz4raw"} {
		t.Run(codec, func(t *testing.T) {
			c := pqgen.Config{Rows: 4000, RowGroups: 4, Seed: 5, NoCovering: true, Codec: codec}
			data := genFile(t, c)
			a := Adapter{Footprints: NewFootprintCache(64)}
			checkRowGroupBBoxes(t, layoutWith(t, a, data), pqgen.RowGroupBBoxes(pqgen.Generate(c), c.PerGroup()))
		})
	}
}
