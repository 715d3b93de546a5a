package manifest

import (
	"bytes"
	"fmt"
	"math/rand"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/geom"
	"github.com/chunkvc/chunkvc/hashing"
)

// tiledManifest is a COG-like manifest of a w×h grid of tiles at z0 and
// its overviews, keyed as the tiff adapter keys them.
func tiledManifest(w, h int) *Manifest {
	m := &Manifest{Path: "data/dem.tif", Format: "tiff", FormatVersion: 1, Size: 1 << 30,
		Digest: hashing.Sum([]byte("file")), Layout: hashing.Sum([]byte("layout")), LayoutSize: 999,
		Summary: []Field{{"crs", "EPSG:3857"}}}
	for z := 0; w>>z > 0 && h>>z > 0; z++ {
		for r := 0; r < h>>z; r++ {
			for c := 0; c < w>>z; c++ {
				k := fmt.Sprintf("z%d/r%d/c%d", z, r, c)
				b := geom.BBox{MinX: float64(c << z), MinY: float64(r << z), MaxX: float64((c + 1) << z), MaxY: float64((r + 1) << z)}
				m.Chunks = append(m.Chunks, Chunk{Key: k, Size: int64(1000 + r + c), ID: hashing.Sum([]byte(k)), BBox: &b})
			}
		}
	}
	sortChunks(m.Chunks)
	return m
}

func sortChunks(cs []Chunk) {
	for i := 1; i < len(cs); i++ {
		for j := i; j > 0 && NaturalLess(cs[j].Key, cs[j-1].Key); j-- {
			cs[j], cs[j-1] = cs[j-1], cs[j]
		}
	}
}

// byBlock is a tile-block shard function like the tiff adapter's.
func byBlock(key string) string {
	var z, r, c int
	if _, err := fmt.Sscanf(key, "z%d/r%d/c%d", &z, &r, &c); err != nil {
		return ""
	}
	return fmt.Sprintf("z%d/r%d/c%d", z, r/8*8, c/8*8)
}

func TestSplitRoundTrip(t *testing.T) {
	m := tiledManifest(60, 40)
	for _, shardOf := range []func(string) string{byBlock, nil} {
		root, parts, err := m.EncodeSplit(shardOf)
		if err != nil {
			t.Fatal(err)
		}
		if !IsSplit(root) || len(parts) < 2 {
			t.Fatalf("root %q, %d parts", root[:40], len(parts))
		}
		for _, p := range parts {
			if len(p.Data) > 1<<20 {
				t.Errorf("shard %s is %d bytes", p.Name, len(p.Data))
			}
		}
		shuffled := append([]Part(nil), parts...)
		rand.New(rand.NewSource(1)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		got, err := DecodeSplit(root, shuffled)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := m.Encode()
		b, _ := got.Encode()
		if !bytes.Equal(a, b) {
			t.Fatal("decoded split manifest differs from the original")
		}
		// Deterministic: the same manifest gives the same bytes.
		root2, parts2, _ := m.EncodeSplit(shardOf)
		if !bytes.Equal(root, root2) || len(parts2) != len(parts) {
			t.Fatal("two encodings differ")
		}
	}
}

// A changed chunk rewrites its shard and the root, nothing else; a chunk
// added at the grid's edge touches no other shard.
func TestSplitLocality(t *testing.T) {
	m := tiledManifest(64, 64)
	_, before, err := m.EncodeSplit(byBlock)
	if err != nil {
		t.Fatal(err)
	}
	old := map[string]string{}
	for _, p := range before {
		old[p.Name] = string(p.Data)
	}
	for i, c := range m.Chunks {
		if c.Key == "z0/r17/c30" {
			m.Chunks[i].ID = hashing.Sum([]byte("edited"))
		}
	}
	m.Chunks = append(m.Chunks, Chunk{Key: "z0/r64/c0", Size: 5, ID: hashing.Sum([]byte("new row"))})
	sortChunks(m.Chunks)
	_, after, err := m.EncodeSplit(byBlock)
	if err != nil {
		t.Fatal(err)
	}
	var changed []string
	for _, p := range after {
		if old[p.Name] != string(p.Data) {
			changed = append(changed, p.Name)
		}
	}
	if strings.Join(changed, " ") != "z0/r16/c24 z0/r64/c0" {
		t.Errorf("shards changed: %v", changed)
	}
}

func TestDecodeSplitRefuses(t *testing.T) {
	m := tiledManifest(40, 40)
	root, parts, err := m.EncodeSplit(byBlock)
	if err != nil {
		t.Fatal(err)
	}
	clone := func() []Part {
		out := make([]Part, len(parts))
		for i, p := range parts {
			out[i] = Part{p.Name, bytes.Clone(p.Data)}
		}
		return out
	}
	cases := map[string]func() ([]byte, []Part){
		"missing shard": func() ([]byte, []Part) { return root, clone()[1:] },
		"extra shard": func() ([]byte, []Part) {
			return root, append(clone(), Part{"z9/r0/c0", encodeShard(m.Path, "z9/r0/c0", nil)})
		},
		"renamed shard": func() ([]byte, []Part) { p := clone(); p[0].Name = "z0/r0/c1"; return root, p },
		"edited chunk": func() ([]byte, []Part) {
			p := clone()
			p[0].Data = bytes.Replace(p[0].Data, []byte(" 1000 "), []byte(" 1001 "), 1)
			return root, p
		},
		"non-canonical root": func() ([]byte, []Part) {
			return bytes.Replace(root, []byte("size 1073741824"), []byte("size 01073741824"), 1), clone()
		},
		"blank line in root": func() ([]byte, []Part) {
			return bytes.Replace(root, []byte("\nchunks"), []byte("\n\nchunks"), 1), clone()
		},
		"root count": func() ([]byte, []Part) {
			return bytes.Replace(root, []byte(fmt.Sprintf("chunks %d\n", len(m.Chunks))), []byte(fmt.Sprintf("chunks %d\n", len(m.Chunks)+1)), 1), clone()
		},
		"version 1": func() ([]byte, []Part) {
			return bytes.Replace(root, []byte("manifest 2"), []byte("manifest 1"), 1), clone()
		},
	}
	for name, mk := range cases {
		r, p := mk()
		if _, err := DecodeSplit(r, p); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// A key in two shards, each canonical and the digest made to match.
	p := clone()
	dup := m.Chunks[0]
	p[1] = Part{p[1].Name, encodeShard(m.Path, p[1].Name, append([]Chunk{dup}, mustShard(t, m.Path, p[1])...))}
	r, _ := m.encodeRoot(len(p), ShardsDigest(p))
	if _, err := DecodeSplit(r, p); err == nil {
		t.Error("a key in two shards accepted")
	}
}

func mustShard(t *testing.T, path string, p Part) []Chunk {
	cs, err := decodeShard(path, p, &chunkParser{coords: map[string]float64{}})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// Shards are bounded whatever the shard function: an oversized one is cut
// into buckets; a function's name no path can hold gives way to buckets.
func TestSplitBounds(t *testing.T) {
	m := tiledManifest(100, 100)
	_, parts, err := m.EncodeSplit(func(string) string { return "all" })
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		if !strings.HasPrefix(p.Name, "all/h") || strings.Count(string(p.Data), "\n") > MaxShardChunks+4 {
			t.Fatalf("shard %s: %d lines", p.Name, strings.Count(string(p.Data), "\n"))
		}
	}
	_, parts, err = m.EncodeSplit(func(string) string { return "../x" })
	if err != nil || !strings.HasPrefix(parts[0].Name, "h") {
		t.Fatalf("%v %v", err, parts[0].Name)
	}
}

func FuzzDecodeSplit(f *testing.F) {
	m := tiledManifest(20, 20)
	root, parts, _ := m.EncodeSplit(byBlock)
	f.Add(root, parts[0].Name, parts[0].Data)
	f.Add([]byte("chunkvc-manifest 2\nchunks 0\nshards 0 blake3:00\n"), "h0", []byte("chunkvc-shard 1\n"))
	f.Fuzz(func(t *testing.T, root []byte, name string, data []byte) {
		m, err := DecodeSplit(root, []Part{{name, data}})
		if err != nil {
			return
		}
		r2, p2, err := m.EncodeSplit(func(string) string { return name })
		if err == nil && len(p2) == 1 && (!bytes.Equal(r2, root) || !bytes.Equal(p2[0].Data, data)) {
			t.Fatalf("accepted a non-canonical split manifest")
		}
	})
}

// TestDecodeRootAndShard: a root and each shard decode on their own (as
// Git's textconv driver sees them, one file at a time), and give back what
// the split manifest holds.
func TestDecodeRootAndShard(t *testing.T) {
	m := tiledManifest(40, 30)
	root, parts, err := m.EncodeSplit(byBlock)
	if err != nil {
		t.Fatal(err)
	}
	head, count, shards, err := DecodeRoot(root)
	if err != nil || count != len(m.Chunks) || head.Path != m.Path || head.Digest != m.Digest || len(head.Chunks) != 0 ||
		shards != fmt.Sprintf("shards %d %s", len(parts), ShardsDigest(parts).Tagged()) {
		t.Fatalf("DecodeRoot: %+v, %d chunks, %q, %v", head, count, shards, err)
	}
	var all []Chunk
	for _, p := range parts {
		path, name, cs, err := DecodeShard(p.Data)
		if err != nil || path != m.Path || name != p.Name {
			t.Fatalf("DecodeShard(%s): %q %q, %v", p.Name, path, name, err)
		}
		all = append(all, cs...)
	}
	sortChunks(all)
	if fmt.Sprint(all) != fmt.Sprint(m.Chunks) {
		t.Fatal("the shards decoded one by one do not hold the manifest's chunks")
	}
	for _, bad := range [][]byte{root, []byte("chunkvc-shard 1\npath a\n"), append(bytes.Clone(parts[0].Data), '\n')} {
		if _, _, _, err := DecodeShard(bad); err == nil {
			t.Errorf("DecodeShard accepted %.40q", bad)
		}
	}
	if _, _, _, err := DecodeRoot(parts[0].Data); err == nil {
		t.Error("DecodeRoot accepted a shard")
	}
}

func FuzzDecodeShard(f *testing.F) {
	_, parts, _ := tiledManifest(20, 20).EncodeSplit(byBlock)
	f.Add(parts[0].Data)
	f.Add([]byte("chunkvc-shard 1\npath a\nshard h0\nchunks 0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path, name, cs, err := DecodeShard(data)
		if err != nil {
			return
		}
		if again := encodeShard(path, name, cs); !bytes.Equal(again, data) {
			t.Fatalf("accepted a non-canonical shard")
		}
	})
}

// TestShardsDigestIsDocumented: ShardsDigest is the BLAKE3 of the shards as
// the format's documentation spells them, one after the other.
func TestShardsDigestIsDocumented(t *testing.T) {
	_, parts, err := tiledManifest(30, 30).EncodeSplit(byBlock)
	if err != nil {
		t.Fatal(err)
	}
	var b []byte
	for _, p := range parts {
		b = fmt.Appendf(b, "%s\n%d\n%s", p.Name, len(p.Data), p.Data)
	}
	if got, want := ShardsDigest(parts), hashing.Sum(b); got != want {
		t.Fatalf("ShardsDigest = %s, want %s", got, want)
	}
}

// BenchmarkSplit500k: a split manifest of about 546,000 tiles (a 640x640
// tile grid and its overviews, as make bench's tiles-big.tif) encoded, and
// decoded from its root and shards.
func BenchmarkSplit500k(b *testing.B) {
	m := tiledManifest(640, 640)
	root, parts, err := m.EncodeSplit(byBlock)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encode", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := m.EncodeSplit(byBlock); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			if _, err := DecodeSplit(root, slices.Clone(parts)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A decoded split manifest keeps its keys, not the text of its shards:
// per chunk, about the Chunk and its key stay reachable, where holding the
// lines (a 64-digit ID and a size each) took some 85 bytes more.
func TestDecodeSplitKeepsKeysNotText(t *testing.T) {
	m := bigManifest(40_000, 3)
	root, parts, err := m.EncodeSplit(BucketShards(len(m.Chunks)))
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got, err := DecodeSplit(root, parts)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perChunk := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / int64(len(got.Chunks))
	runtime.KeepAlive(got)
	runtime.KeepAlive(parts)
	if perChunk > 110 {
		t.Fatalf("a decoded split manifest keeps %d bytes a chunk, want at most 110 (a Chunk is 64, its key about 12)", perChunk)
	}
}

// Shard texts are held at their length, not at what growing them left.
func TestSplitTextsFit(t *testing.T) {
	m := tiledManifest(300, 300)
	_, parts, err := m.EncodeSplit(byBlock)
	if err != nil {
		t.Fatal(err)
	}
	var n, c int
	for _, p := range parts {
		n, c = n+len(p.Data), c+cap(p.Data)
		if string(p.Data) != string(encodeShard(m.Path, p.Name, mustShard(t, m.Path, p))) {
			t.Fatalf("shard %s differs from its encodeShard", p.Name)
		}
	}
	if c > n+n/10 {
		t.Errorf("%d shards: %d bytes held for %d of text", len(parts), c, n)
	}
}

// DecodeSplit lets each shard's text go once it has decoded it.
func TestDecodeSplitDropsTexts(t *testing.T) {
	m := tiledManifest(40, 40)
	root, parts, err := m.EncodeSplit(byBlock)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeSplit(root, parts); err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		if p.Data != nil {
			t.Fatalf("shard %s: %d bytes of text kept", p.Name, len(p.Data))
		}
	}
}
