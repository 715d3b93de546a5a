package mcache

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/chunkvc/chunkvc/geom"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
)

// grid is the chunk lines of a tiled raster: n×n tiles, every third one
// without a footprint, keys in natural order as a manifest holds them.
func grid(n int) []manifest.Chunk {
	var cs []manifest.Chunk
	for r := range n {
		for c := range n {
			ch := manifest.Chunk{Key: fmt.Sprintf("z0/r%d/c%d", r, c), Size: int64(1000 + r*n + c),
				ID: hashing.Sum(fmt.Appendf(nil, "%d/%d", r, c))}
			if (r*n+c)%3 != 0 {
				ch.BBox = &geom.BBox{MinX: float64(c) * 0.1, MinY: -float64(r+1) * 0.1, MaxX: float64(c+1) * 0.1, MaxY: -float64(r) * 0.1}
			}
			cs = append(cs, ch)
		}
	}
	slices.SortFunc(cs, func(a, b manifest.Chunk) int { return manifest.NaturalCompare(a.Key, b.Key) })
	return cs
}

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	root := Root{1, 2, 3}
	negZero := &geom.BBox{MinX: math.Copysign(0, -1), MinY: 1e-300, MaxX: 1, MaxY: 2}
	for _, cs := range [][]manifest.Chunk{
		nil,
		{{Key: "a", Size: 0, ID: hashing.Sum([]byte("a")), BBox: negZero}},
		grid(40),
	} {
		file := Slot(dir, "data/x.tif")
		if err := Save(file, root, cs); err != nil {
			t.Fatal(err)
		}
		got, ok := Load(file, root, len(cs))
		if !ok {
			t.Fatalf("%d chunks: saved cache not loaded", len(cs))
		}
		if len(cs) == 0 {
			if len(got) != 0 {
				t.Fatalf("empty cache loaded %d chunks", len(got))
			}
			continue
		}
		if !reflect.DeepEqual(got, cs) {
			t.Fatalf("%d chunks: loaded chunks differ from those saved", len(cs))
		}
		if cs[0].BBox == negZero && !math.Signbit(got[0].BBox.MinX) {
			t.Fatal("-0 came back as 0")
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*tmp*")); len(left) > 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

// Anything but the cache of the root asked for is a miss.
func TestMisses(t *testing.T) {
	dir := t.TempDir()
	root := Root{9}
	cs := grid(10)
	file := Slot(dir, "a.tif")
	if err := Save(file, root, cs); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := Load(file, Root{8}, len(cs)); ok {
		t.Fatal("a cache of another root was loaded")
	}
	if _, ok := Load(file, root, len(cs)-1); ok {
		t.Fatal("a cache of another chunk count was loaded")
	}
	if _, ok := Load(Slot(dir, "b.tif"), root, len(cs)); ok {
		t.Fatal("a missing file was loaded")
	}
	cases := map[string][]byte{
		"truncated":     good[:len(good)-1],
		"extended":      append(slices.Clone(good), 0),
		"flipped":       flip(good, len(good)/2),
		"flipped sum":   flip(good, len(good)-1),
		"other version": append([]byte("chunkvc-mcache 2\n"), good[len(magic):]...),
		"empty":         nil,
	}
	for name, b := range cases {
		if err := os.WriteFile(file, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, ok := Load(file, root, len(cs)); ok {
			t.Errorf("%s cache loaded", name)
		}
	}
	// Keys out of order under a good checksum (a writer's bug, never a
	// reader's trust): a miss.
	swapped := slices.Clone(cs)
	swapped[1], swapped[2] = swapped[2], swapped[1]
	if err := Save(file, root, swapped); err != nil {
		t.Fatal(err)
	}
	if _, ok := Load(file, root, len(cs)); ok {
		t.Error("a cache of keys out of order loaded")
	}
}

func flip(b []byte, at int) []byte {
	b = slices.Clone(b)
	b[at] ^= 0x40
	return b
}

// FuzzDecode: no input panics or claims more than it holds, and what
// decodes is what Save writes for those chunks, byte for byte.
func FuzzDecode(f *testing.F) {
	root := Root{7}
	for _, cs := range [][]manifest.Chunk{nil, grid(1), grid(3)} {
		var b bytes.Buffer
		if err := write(&b, root, cs); err != nil {
			f.Fatal(err)
		}
		f.Add(b.Bytes(), len(cs))
	}
	f.Fuzz(func(t *testing.T, data []byte, count int) {
		cs, err := Decode(bytes.NewReader(data), int64(len(data)), root, count)
		if err != nil {
			return
		}
		if len(cs) != count {
			t.Fatalf("decoded %d chunks, asked for %d", len(cs), count)
		}
		var again bytes.Buffer
		if err := write(&again, root, cs); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again.Bytes(), data) {
			t.Fatal("decoded chunks encode to other bytes")
		}
	})
}

// BenchmarkLoad546k: the chunk lines of a 739×739 tile grid (about the
// 521,623 tiles of make bench's tiles-big.tif) read from the cache, and
// from the root and shards as a command without it reads them.
func BenchmarkLoad546k(b *testing.B) {
	cs := grid(739)
	m := &manifest.Manifest{Path: "tiles-big.tif", Format: "tiff", FormatVersion: 1, Size: 1, Chunks: cs}
	root, parts, err := m.EncodeSplit(nil)
	if err != nil {
		b.Fatal(err)
	}
	file := Slot(b.TempDir(), m.Path)
	if err := Save(file, Root{1}, cs); err != nil {
		b.Fatal(err)
	}
	b.Run("shards", func(b *testing.B) {
		for b.Loop() {
			if _, err := manifest.DecodeSplit(root, slices.Clone(parts)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cache", func(b *testing.B) {
		for b.Loop() {
			if _, ok := Load(file, Root{1}, len(cs)); !ok {
				b.Fatal("miss")
			}
		}
	})
}
