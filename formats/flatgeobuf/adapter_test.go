package flatgeobuf

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/formats/formattest"
	"github.com/chunkvc/chunkvc/geom"
	"github.com/chunkvc/chunkvc/hashing"
)

func TestDetect(t *testing.T) {
	for _, c := range []struct {
		head string
		want bool
	}{
		{"fgb\x03fgb\x00", true},
		{"fgb\x03fgb\x01rest", true},
		{"fgb\x03fgb\xff", true},
		{"fgb\x02fgb\x00", false},
		{"fgb\x03fgc\x00", false},
		{"fgb\x03fgb", false},
		{"", false},
	} {
		if got := (Adapter{}).Detect([]byte(c.head)); got != c.want {
			t.Errorf("Detect(%q) = %v, want %v", c.head, got, c.want)
		}
	}
}

func TestIndexSize(t *testing.T) {
	for _, c := range []struct {
		n    uint64
		ns   uint16
		want int64
		err  bool
	}{
		{3000, 16, 3201 * 40, false},
		{1, 16, 2 * 40, false},
		{16, 16, 17 * 40, false},
		{17, 16, (17 + 2 + 1) * 40, false},
		{4, 2, (4 + 2 + 1) * 40, false},
		{1 << 56, 2, 0, false},
		{0, 16, 0, true},
		{10, 1, 0, true},
		{10, 0, 0, true},
		{1<<56 + 1, 16, 0, true},
	} {
		got, err := IndexSize(c.n, c.ns)
		if (err != nil) != c.err || (c.want != 0 && got != c.want) {
			t.Errorf("IndexSize(%d, %d) = %d, %v; want %d, error %v", c.n, c.ns, got, err, c.want, c.err)
		}
	}
}

// headerField returns the byte position of header field i in data (the
// whole file), or -1 when absent.
func headerField(t *testing.T, data []byte, i int, width uint32) int {
	t.Helper()
	hl := binary.LittleEndian.Uint32(data[8:])
	tb, err := root(data[12 : 12+hl])
	if err != nil {
		t.Fatal(err)
	}
	p, ok, err := tb.field(i, width)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return -1
	}
	return 12 + int(p)
}

// TestMalformed: forged headers and records are refused with a reason,
// never panic, and never yield an invalid layout.
func TestMalformed(t *testing.T) {
	var src, het []byte
	for _, c := range corpusFGBs(t) {
		if strings.HasSuffix(c.Name, "countries.fgb") {
			src = c.Data
		}
		if strings.HasSuffix(c.Name, "heterogeneous.fgb") {
			het = c.Data // index_node_size written as 0, features_count 3
		}
	}
	if src == nil || het == nil {
		t.Skip("countries.fgb or heterogeneous.fgb not in the corpus")
	}
	patch := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), src...)) }
	cnt := headerField(t, src, 8, 8)
	if cnt < 0 {
		t.Fatal("countries.fgb has no features_count")
	}
	cases := map[string][]byte{
		"header_len=size": patch(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[8:], uint32(len(b))); return b }),
		"header_len=max":  patch(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[8:], ^uint32(0)); return b }),
		"count+1":         patch(func(b []byte) []byte { binary.LittleEndian.PutUint64(b[cnt:], 180); return b }),
		"count-1":         patch(func(b []byte) []byte { binary.LittleEndian.PutUint64(b[cnt:], 178); return b }),
		"count=2^57":      patch(func(b []byte) []byte { binary.LittleEndian.PutUint64(b[cnt:], 1<<57); return b }),
		"count=2^64-1":    patch(func(b []byte) []byte { binary.LittleEndian.PutUint64(b[cnt:], ^uint64(0)); return b }),
		"count=0":         patch(func(b []byte) []byte { binary.LittleEndian.PutUint64(b[cnt:], 0); return b }),
		"truncated":       src[:len(src)-5],
		"trailing 3":      append(append([]byte(nil), src...), 1, 2, 3),
		"record past EOF": append(append([]byte(nil), src...), 0xff, 0xff, 0, 0, 9, 9),
		"empty record":    append(append([]byte(nil), src...), 0, 0, 0, 0),
		"root offset":     patch(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[12:], 0x7ffffff0); return b }),
	}
	ns := headerField(t, het, 9, 2)
	if ns < 0 {
		t.Fatal("heterogeneous.fgb has no index_node_size field")
	}
	for _, v := range []uint16{1, 2, 16} {
		b := append([]byte(nil), het...)
		binary.LittleEndian.PutUint16(b[ns:], v)
		cases[fmt.Sprintf("node_size=%d", v)] = b
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			formattest.Fuzz(t, Adapter{}, data)
			if _, err := formattest.Layout(Adapter{}, data); err == nil {
				t.Fatal("accepted a malformed file")
			} else {
				t.Logf("refused: %v", err)
			}
		})
	}
}

// synthetic returns n features with random sizes and IDs, laid out from 0.
func synthetic(rng *rand.Rand, n int) []Feature {
	fs := make([]Feature, n)
	for i := range fs {
		rng.Read(fs[i].ID[:])
		fs[i].Len = 40 + rng.Int63n(2000)
		fs[i].BBox = geom.BBox{MinX: float64(i), MaxX: float64(i) + 1, MaxY: 1}
	}
	return fs
}

func relayout(fs []Feature) []Feature {
	out := append([]Feature(nil), fs...)
	var off int64
	for i := range out {
		out[i].Off = off
		off += out[i].Len
	}
	return out
}

// TestBlocksStable: deleting, inserting or changing one feature keeps the
// key and extent of every block but the ones around it.
func TestBlocksStable(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	base := relayout(synthetic(rng, 40000))
	extra := synthetic(rng, 1)[0]
	edits := map[string][]Feature{
		"delete": relayout(append(append([]Feature(nil), base[:20000]...), base[20001:]...)),
		"insert": relayout(append(append(append([]Feature(nil), base[:20000]...), extra), base[20000:]...)),
		"change": relayout(append(append(append([]Feature(nil), base[:20000]...), extra), base[20001:]...)),
	}
	bb := blocks(base, defaultBlocking)
	if len(bb) < 20 {
		t.Fatalf("only %d blocks over %d features", len(bb), len(base))
	}
	type sig struct {
		key string
		len int64
	}
	have := map[sig]bool{}
	for _, b := range bb {
		if b.len > BlockMax || b.bbox == nil {
			t.Fatalf("block %+v: over BlockMax or without bbox", b)
		}
		have[sig{b.key, b.len}] = true
	}
	for name, fs := range edits {
		ab := blocks(fs, defaultBlocking)
		lost := 0
		for _, b := range ab {
			if !have[sig{b.key, b.len}] {
				lost++
			}
		}
		t.Logf("%s: %d blocks, %d new", name, len(ab), lost)
		if lost > 2 {
			t.Errorf("%s of one feature changed %d of %d blocks", name, lost, len(ab))
		}
	}
}

// TestDuplicateKeys: blocks that start with the same feature get distinct
// keys unless their content is identical.
func TestDuplicateKeys(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	a := synthetic(rng, 1)[0]
	a.Len = BlockMin // one feature fills a block, and cuts only by its hash
	b := synthetic(rng, 1)[0]
	fs := relayout([]Feature{a, a, b, a, a, b})
	p := blocking{min: 1, avg: 1, max: 1 << 40, split: 1 << 40} // cut after every feature
	var keys []string
	for _, x := range blocks(fs, p) {
		keys = append(keys, x.key)
	}
	ka, kb := "f/"+a.ID.Short(), "f/"+b.ID.Short()
	want := []string{ka, ka, kb, ka, ka, kb}
	if strings.Join(keys, " ") != strings.Join(want, " ") {
		t.Fatalf("keys %v, want %v", keys, want)
	}
	p = blocking{min: 1, avg: 1 << 40, max: 2*BlockMin + 1, split: 1 << 40} // cuts forced by max only
	keys = keys[:0]
	for _, x := range blocks(fs, p) {
		keys = append(keys, x.key)
	}
	// [a a] [b a] [a b]: the third block starts with a but differs from the first.
	if want := []string{ka, kb, ka + ".2"}; strings.Join(keys, " ") != strings.Join(want, " ") {
		t.Fatalf("keys %v, want %v", keys, want)
	}
}

// TestSplitBigFeature: a record over the split size is cut by content into
// "<block key>@" chunks that cover it exactly.
func TestSplitBigFeature(t *testing.T) {
	var src []byte
	for _, c := range corpusFGBs(t) {
		if strings.HasSuffix(c.Name, "countries.fgb") {
			src = c.Data
		}
	}
	if src == nil {
		t.Skip("countries.fgb not in the corpus")
	}
	l, err := layout(context.Background(), bytes.NewReader(src), int64(len(src)), blocking{min: 4096, avg: 8192, max: 16384, split: 2048})
	if err != nil {
		t.Fatal(err)
	}
	if err := formats.Check(l, int64(len(src))); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(formattest.Reassemble(t, Adapter{}, l, src), src) {
		t.Fatal("reassembly differs")
	}
	split := 0
	for _, s := range l.Chunks() {
		if strings.HasPrefix(s.Key, "f/") && strings.HasSuffix(s.Key, "@") {
			split++
			if s.BBox == nil {
				t.Errorf("split chunk %s has no bbox", s.Key)
			}
		}
	}
	if split == 0 {
		t.Fatal("no record over 2048 bytes was split")
	}
}

// TestFeatures: Features lists every record with its hash and bbox.
func TestFeatures(t *testing.T) {
	for _, c := range corpusFGBs(t) {
		fs, err := Features(bytes.NewReader(c.Data), int64(len(c.Data)))
		if err != nil {
			continue
		}
		for _, f := range fs {
			if f.Off < 0 || f.Len < 8 || f.Off+f.Len > int64(len(c.Data)) {
				t.Fatalf("%s: record %d+%d out of range", c.Name, f.Off, f.Len)
			}
			if hashing.Sum(c.Data[f.Off+4:f.Off+f.Len]) != f.ID {
				t.Fatalf("%s: record at %d: ID is not the hash of its flatbuffer", c.Name, f.Off)
			}
		}
		if strings.HasSuffix(c.Name, "heterogeneous.fgb") && (len(fs) != 3 || fs[0].Empty()) {
			t.Errorf("%s: %d features, first empty=%v", c.Name, len(fs), len(fs) > 0 && fs[0].Empty())
		}
	}
}

// dagFeature builds a Feature flatbuffer whose geometry parts form a DAG:
// every level's parts vector points twice at the next level, so a naive
// walk visits 2^depth geometries in a buffer of 40+44·(depth+1) bytes.
func dagFeature(depth int) []byte {
	var b []byte
	p32 := func(v uint32) { b = binary.LittleEndian.AppendUint32(b, v) }
	p16 := func(vs ...uint16) {
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint16(b, v)
		}
	}
	p32(12)                             // 0: root → Feature table at 12
	p16(6, 8, 4, 0)                     // 4: Feature vtable: field 0 (geometry) at +4
	p32(8)                              // 12: soffset → vtable at 4
	p32(24)                             // 16: geometry → 40
	p16(20, 12, 0, 4, 0, 0, 0, 0, 0, 8) // 20: Geometry vtable: xy at +4, parts at +8
	for i := 0; i <= depth; i++ {
		p := uint32(len(b))
		p32(p - 20) // soffset → vtable at 20
		p32(8)      // xy at p+12
		p32(24)     // parts at p+32
		p32(2)
		b = binary.LittleEndian.AppendUint64(b, 0x3ff0000000000000) // 1.0
		b = binary.LittleEndian.AppendUint64(b, 0x4000000000000000) // 2.0
		if i == depth {
			p32(0)
			p32(0)
			p32(0)
			continue
		}
		p32(2)
		p32(8) // p+36 → p+44
		p32(4) // p+40 → p+44
	}
	return b
}

// TestGeometryDAG: shared sub-geometries cannot make the bbox walk
// exponential; a plain two-part tree still reads.
func TestGeometryDAG(t *testing.T) {
	bb, err := featureBBox(dagFeature(1))
	if err != nil || bb != (geom.BBox{MinX: 1, MinY: 2, MaxX: 1, MaxY: 2}) {
		t.Fatalf("depth 1: %v, %v", bb, err)
	}
	if _, err := featureBBox(dagFeature(40)); err == nil {
		t.Fatal("a DAG of 2^40 visits was walked to the end")
	}
}
