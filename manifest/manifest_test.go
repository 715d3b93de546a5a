package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"sort"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/geom"
	"github.com/chunkvc/chunkvc/hashing"
)

func sample() *Manifest {
	bb := geom.BBox{MinX: 500000, MinY: 4599744.5, MaxX: 507680, MaxY: 4607680}
	return &Manifest{
		Path: "data/dem.tif", Format: "tiff", FormatVersion: 1,
		Size: 12345, Digest: hashing.Sum([]byte("file")), Layout: hashing.Sum([]byte("layout")), LayoutSize: 321,
		Summary: []Field{{"width", "4096"}, {"crs", "EPSG:32633"}},
		Chunks: []Chunk{
			{Key: "z0/r2/c0", Size: 10, ID: hashing.Sum([]byte("a")), BBox: &bb},
			{Key: "z0/r10/c0", Size: 11, ID: hashing.Sum([]byte("b"))},
		},
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	m := sample()
	chunks, err := Normalize(m.Chunks)
	if err != nil {
		t.Fatal(err)
	}
	m.Chunks = chunks
	b, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "z0/r2/c0 10 ") || strings.Index(string(b), "z0/r2/") > strings.Index(string(b), "z0/r10/") {
		t.Fatalf("chunk lines not in natural order:\n%s", b)
	}
	if !strings.Contains(string(b), "500000,4599744.5,507680,4607680") {
		t.Fatalf("bbox not in plain decimal:\n%s", b)
	}
	m2, err := Decode(b)
	if err != nil {
		t.Fatalf("decode: %v\n%s", err, b)
	}
	b2, _ := m2.Encode()
	if !bytes.Equal(b, b2) {
		t.Fatal("re-encoding differs")
	}
	if m2.Chunks[0].BBox == nil || *m2.Chunks[0].BBox != *m.Chunks[0].BBox || m2.Digest != m.Digest {
		t.Fatal("decoded values differ")
	}
}

func TestDecodeRejectsNonCanonical(t *testing.T) {
	m := sample()
	m.Chunks, _ = Normalize(m.Chunks)
	good, _ := m.Encode()
	muts := map[string]string{
		"crlf":          strings.ReplaceAll(string(good), "\n", "\r\n"),
		"extra space":   strings.Replace(string(good), "size 12345", "size  12345", 1),
		"leading zero":  strings.Replace(string(good), "size 12345", "size 012345", 1),
		"upper hex":     strings.Replace(string(good), m.Digest.String(), strings.ToUpper(m.Digest.String()), 1),
		"trailing text": string(good) + "junk\n",
		"no newline":    strings.TrimSuffix(string(good), "\n"),
		"count":         strings.Replace(string(good), "chunks 2", "chunks 3", 1),
		"order":         swapLines(string(good)),
		"version":       strings.Replace(string(good), "chunkvc-manifest 1", "chunkvc-manifest 2", 1),
		"path escape":   strings.Replace(string(good), "path data/dem.tif", "path ../dem.tif", 1),
		"abs path":      strings.Replace(string(good), "path data/dem.tif", "path /etc/passwd", 1),
		"git path":      strings.Replace(string(good), "path data/dem.tif", "path .git/config", 1),
		"bbox exponent": strings.Replace(string(good), "500000,", "5e+05,", 1),
	}
	for name, s := range muts {
		if _, err := Decode([]byte(s)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Decode err = %v, want ErrInvalid", name, err)
		}
	}
}

// TestEncodeSpellsEachCoordinate checks the coordinates a manifest spells
// from memory (spellings) against FormatBBox, line by line: a grid's shared
// edges, 0 and -0 (equal as floats, spelled apart), and more distinct
// values than the memory holds.
func TestEncodeSpellsEachCoordinate(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	var chunks []Chunk
	for r := range 40 {
		for c := range 40 {
			bb := [4]float64{500000 + float64(c)*529.5838383, 4620480 - float64(r+1)*529.5838383, 500000 + float64(c+1)*529.5838383, 4620480 - float64(r)*529.5838383}
			switch {
			case r == 3:
				bb = [4]float64{math.Copysign(0, -1), 0, 0, math.Copysign(0, 1)}
			case r == 4:
				bb = [4]float64{0, math.Copysign(0, -1), math.Copysign(0, -1), 0}
			case r >= 20: // scattered: no two lines share a value
				x, y := rng.Float64()*1e6, rng.Float64()*1e6
				bb = [4]float64{x, y, x + rng.Float64(), y + rng.Float64()}
			}
			b := geom.FromArray(bb)
			chunks = append(chunks, Chunk{Key: fmt.Sprintf("z0/r%d/c%d", r, c), Size: 1, ID: hashing.Sum([]byte{byte(r), byte(c)}), BBox: &b})
		}
	}
	m := sample()
	m.Chunks, _ = Normalize(chunks)
	b, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	lines = lines[len(lines)-len(m.Chunks):]
	for i, c := range m.Chunks {
		want := fmt.Sprintf("%s 1 %s %s", c.Key, c.ID, FormatBBox(*c.BBox))
		if lines[i] != want {
			t.Fatalf("line %d: %q, want %q", i, lines[i], want)
		}
	}
	m2, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range m2.Chunks {
		for k, v := range c.BBox.Array() {
			if w := m.Chunks[i].BBox.Array()[k]; math.Float64bits(v) != math.Float64bits(w) {
				t.Fatalf("chunk %s: coordinate %d decoded as %v, was %v", c.Key, k, v, w)
			}
		}
	}
}

// TestEncodeTo: the text written in pieces is Encode's, byte for byte, for
// a manifest of several pieces whose spellings memory fills up; a failed
// write stops the encoding with its error; a manifest that Encode refuses
// writes nothing.
func TestEncodeTo(t *testing.T) {
	var chunks []Chunk
	rng := rand.New(rand.NewSource(8))
	for i := range 3000 {
		x, y := rng.Float64()*1e6, rng.Float64()*1e6
		bb := geom.BBox{MinX: x, MinY: y, MaxX: x + 1, MaxY: y + 1}
		chunks = append(chunks, Chunk{Key: fmt.Sprintf("c%d", i), Size: int64(i), ID: hashing.Sum([]byte{byte(i), byte(i >> 8)}), BBox: &bb})
	}
	m := sample()
	m.Chunks, _ = Normalize(chunks)
	want, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	var pieces int
	var got bytes.Buffer
	n, err := m.EncodeTo(writerFunc(func(b []byte) (int, error) { pieces++; return got.Write(b) }))
	if err != nil || n != int64(len(want)) || !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("EncodeTo wrote %d bytes (%v), %d in the buffer; want Encode's %d, equal", n, err, got.Len(), len(want))
	}
	if pieces < 2 || len(want) < 4*encodeBuffer {
		t.Fatalf("%d bytes in %d writes: the test needs several", len(want), pieces)
	}
	boom := errors.New("disk full")
	calls := 0
	if _, err := m.EncodeTo(writerFunc(func(b []byte) (int, error) { calls++; return 0, boom })); !errors.Is(err, boom) || calls != 1 {
		t.Errorf("EncodeTo to a failing writer: %v after %d writes; want its error after 1", err, calls)
	}
	m.Chunks = append(m.Chunks, m.Chunks[0]) // out of order
	got.Reset()
	if _, err := m.EncodeTo(&got); err == nil || got.Len() != 0 {
		t.Errorf("EncodeTo of an invalid manifest: %v, %d bytes written", err, got.Len())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

func TestDecodeRejectsLongLines(t *testing.T) {
	m := sample()
	m.Chunks, _ = Normalize(m.Chunks)
	good, _ := m.Encode()
	long := strings.Replace(string(good), "summary crs EPSG:32633", "summary crs EPSG:32633"+strings.Repeat("0", maxLine), 1)
	if _, err := Decode([]byte(long)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "line 8: longer than") {
		t.Errorf("a line of over %d bytes: Decode err = %.200v, want ErrInvalid naming line 8", maxLine, err)
	}
}

func swapLines(s string) string {
	lines := strings.Split(s, "\n")
	n := len(lines)
	lines[n-2], lines[n-3] = lines[n-3], lines[n-2]
	return strings.Join(lines, "\n")
}

func TestNaturalLess(t *testing.T) {
	keys := []string{"z1/r0", "z0/r10/c2", "z0/r2/c10", "z0/r2/c9", "mask/z0", "z0/r02/c9", "a", "a0", "a00"}
	sort.Slice(keys, func(i, j int) bool { return NaturalLess(keys[i], keys[j]) })
	want := "a a0 a00 mask/z0 z0/r02/c9 z0/r2/c9 z0/r2/c10 z0/r10/c2 z1/r0"
	if got := strings.Join(keys, " "); got != want {
		t.Fatalf("natural order\n got %s\nwant %s", got, want)
	}
	for _, a := range keys {
		for _, b := range keys {
			if a != b && NaturalLess(a, b) == NaturalLess(b, a) {
				t.Fatalf("order not total for %q, %q", a, b)
			}
		}
	}
}

func TestNormalizeContentKeys(t *testing.T) {
	a, b := hashing.Sum([]byte("a")), hashing.Sum([]byte("b"))
	out, err := Normalize([]Chunk{{Key: "cdc@", ID: b}, {Key: "cdc@", ID: a}, {Key: "cdc@", ID: b}, {Key: "hdr", ID: a}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 3 {
		t.Fatalf("want duplicates merged to 3 lines, got %d", len(out))
	}
	for _, c := range out {
		if strings.HasPrefix(c.Key, "cdc@") && c.Key != "cdc@"+c.ID.String()[:16] {
			t.Fatalf("content key %s not completed with its hash", c.Key)
		}
	}
	if _, err := Normalize([]Chunk{{Key: "k", ID: a}, {Key: "k", ID: b}}); err == nil {
		t.Fatal("two chunks under one key accepted")
	}
	// Forged 16-hex clash: force by giving two ids the same prefix.
	x, y := a, a
	y[31] ^= 1
	out, err = Normalize([]Chunk{{Key: "g@", ID: x}, {Key: "g@", ID: y}})
	if err != nil || len(out) != 2 || len(out[0].Key) != 2+64 {
		t.Fatalf("prefix clash not resolved with full hashes: %v %v", out, err)
	}
}

func TestChunkLineCompact(t *testing.T) {
	bb := geom.BBox{MinX: 512345.25, MinY: 4612345.75, MaxX: 520025.25, MaxY: 4620025.75}
	m := &Manifest{Path: "a.tif", Format: "tiff", FormatVersion: 1, Chunks: []Chunk{{Key: "mask/z3/r120/c340", Size: 1234567, ID: hashing.Sum(nil), BBox: &bb}}}
	b, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if l := len(lines[len(lines)-1]); l > 160 {
		t.Fatalf("chunk line is %d bytes (> 160): %s", l, lines[len(lines)-1])
	}
}

func TestLayoutRoundTripAndBounds(t *testing.T) {
	var l Layout
	l.Append(Piece{Len: 3, Inline: []byte("abc")})
	l.Append(Piece{Len: 2, Inline: []byte("de")})
	l.Append(Piece{Len: 100, Chunk: true, ID: hashing.Sum([]byte("x"))})
	l.Append(Piece{Len: 1, Inline: []byte("f")})
	l.Append(Piece{Len: 40, Derive: "fgb-rtree", ID: hashing.Sum([]byte("idx"))})
	l.Append(Piece{Len: 1, Inline: []byte("g")})
	if l.Len() != 5 || l.Size != 147 || !l.HasDerived() {
		t.Fatalf("append did not merge inline pieces: %d pieces, size %d", l.Len(), l.Size)
	}
	enc := l.Encode()
	got, err := DecodeLayout(enc)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Encode(), enc) || string(got.Piece(0).Inline) != "abcde" || got.Piece(3).Derive != "fgb-rtree" || got.Piece(3).ID != l.Piece(3).ID {
		t.Fatal("layout round trip differs")
	}
	for i := 0; i < len(enc); i++ {
		if _, err := DecodeLayout(enc[:i]); err == nil {
			t.Fatalf("truncated layout (%d of %d bytes) accepted", i, len(enc))
		}
	}
	huge := append([]byte(layoutMagic), 0xff, 0xff, 0xff, 0xff, 0x0f, 0xff, 0xff, 0xff, 0xff, 0x0f)
	if _, err := DecodeLayout(huge); err == nil {
		t.Fatal("absurd piece count accepted")
	}
}

func TestDiff(t *testing.T) {
	id := func(s string) hashing.ID { return hashing.Sum([]byte(s)) }
	a := &Manifest{Chunks: []Chunk{{Key: "k1", Size: 1, ID: id("1")}, {Key: "k2", Size: 2, ID: id("2")}, {Key: "k3", Size: 3, ID: id("3")}}}
	b := &Manifest{Chunks: []Chunk{{Key: "k1", Size: 1, ID: id("1")}, {Key: "k2", Size: 5, ID: id("5")}, {Key: "k4", Size: 3, ID: id("3")}, {Key: "k5", Size: 7, ID: id("7")}}}
	d := Diff(a, b)
	if d.Unchanged != 1 || d.Changed != 1 || d.Removed != 1 || d.Added != 2 {
		t.Fatalf("counts %+v", d)
	}
	if d.NewBytes != 5+7 {
		t.Fatalf("new bytes %d, want 12 (k4 reuses k3's chunk)", d.NewBytes)
	}
	if d := Diff(nil, b); d.Added != 4 || d.NewBytes != 16 {
		t.Fatalf("diff from nothing: %+v", d)
	}
}

func bigManifest(n int, seed int64) *Manifest {
	r := rand.New(rand.NewSource(seed))
	m := &Manifest{Path: "big.tif", Format: "tiff", FormatVersion: 1}
	for i := 0; i < n; i++ {
		var id hashing.ID
		r.Read(id[:])
		m.Chunks = append(m.Chunks, Chunk{Key: fmt.Sprintf("z0/r%d/c%d", i/300, i%300), Size: int64(r.Intn(1 << 20)), ID: id})
	}
	sort.Slice(m.Chunks, func(i, j int) bool { return NaturalLess(m.Chunks[i].Key, m.Chunks[j].Key) })
	return m
}

func BenchmarkDiff100k(b *testing.B) {
	x, y := bigManifest(100000, 1), bigManifest(100000, 1)
	y.Chunks[500].ID[0] ^= 1
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if d := Diff(x, y); d.Changed != 1 {
			b.Fatal(d.Changed)
		}
	}
}

func BenchmarkEncodeDecode100k(b *testing.B) {
	m := bigManifest(100000, 2)
	for i := 0; i < b.N; i++ {
		enc, err := m.Encode()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Decode(enc); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(enc)))
	}
}

func FuzzDecode(f *testing.F) {
	m := sample()
	m.Chunks, _ = Normalize(m.Chunks)
	good, _ := m.Encode()
	f.Add(good)
	f.Add([]byte("chunkvc-manifest 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Decode(data)
		if err != nil {
			return
		}
		again, err := m.Encode()
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("accepted a manifest that does not re-encode to itself: %v", err)
		}
	})
}

func FuzzDecodeLayout(f *testing.F) {
	var l Layout
	l.Append(Piece{Len: 3, Inline: []byte("abc")})
	l.Append(Piece{Len: 9, Chunk: true, ID: hashing.Sum(nil)})
	f.Add(l.Encode())
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := DecodeLayout(data)
		if err != nil {
			return
		}
		var total int64
		for _, p := range l.All() {
			if p.IsInline() && int64(len(p.Inline)) != p.Len {
				t.Fatalf("inline piece of %d bytes holds %d", p.Len, len(p.Inline))
			}
			total += p.Len
		}
		again, err := DecodeLayout(l.Encode())
		if err != nil || again.Len() != l.Len() {
			t.Fatalf("re-encoded layout: %v", err)
		}
		for i, p := range l.All() {
			if q := again.Piece(i); q.Len != p.Len || q.ID != p.ID || q.Derive != p.Derive || !bytes.Equal(q.Inline, p.Inline) {
				t.Fatalf("piece %d differs once re-encoded", i)
			}
		}
		if total != l.Size {
			t.Fatalf("accepted layout with pieces summing to %d, size %d", total, l.Size)
		}
	})
}

// A LayoutEncoder gives Layout.Encode's bytes for the same pieces, and
// refuses pieces that have no canonical encoding or do not add up.
func TestLayoutEncoder(t *testing.T) {
	id := hashing.Sum([]byte("c"))
	var l Layout
	l.Append(Piece{Len: 3, Inline: []byte("abc")})
	l.Append(Piece{Len: 10, Chunk: true, ID: id})
	l.Append(Piece{Len: 7, Derive: "fgb-rtree", ID: id})
	l.Append(Piece{Len: 2, Inline: []byte("de")})
	e := NewLayoutEncoder(22, 4, 0)
	e.Inline([]byte("abc"))
	e.Chunk(10, id)
	e.Derived(7, id, "fgb-rtree")
	e.Inline([]byte("de"))
	got, err := e.Bytes()
	if err != nil || !bytes.Equal(got, l.Encode()) {
		t.Fatalf("encoder: %v; bytes equal to Layout.Encode: %v", err, bytes.Equal(got, l.Encode()))
	}
	for name, f := range map[string]func(e *LayoutEncoder){
		"adjacent inline": func(e *LayoutEncoder) { e.Inline([]byte("ab")); e.Inline([]byte("c")); e.Chunk(19, id) },
		"empty piece":     func(e *LayoutEncoder) { e.Inline(nil); e.Chunk(11, id); e.Chunk(11, id) },
		"short":           func(e *LayoutEncoder) { e.Chunk(10, id); e.Chunk(10, id); e.Chunk(1, id) },
		"too few pieces":  func(e *LayoutEncoder) { e.Chunk(11, id); e.Chunk(11, id) },
	} {
		e := NewLayoutEncoder(22, 3, 0)
		f(e)
		if _, err := e.Bytes(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

func TestMinLayoutSize(t *testing.T) {
	if n := len((&Layout{}).Encode()); n != MinLayoutSize {
		t.Fatalf("an empty file's layout has %d bytes, MinLayoutSize is %d", n, MinLayoutSize)
	}
}
