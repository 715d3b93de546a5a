package zarr

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats"
)

func testArray(path string, keys KeyEncoding, shape, chunks []int64) *Array {
	return &Array{Path: path, Shape: shape, ChunkShape: chunks, Keys: keys}
}

// TestChunkFiles: every encoding formats and parses the paths Zarr gives
// them, both ways.
func TestChunkFiles(t *testing.T) {
	v2dot, v2slash := KeyEncoding{Separator: '.'}, KeyEncoding{Separator: '/'}
	defSlash, defDot := KeyEncoding{Default: true, Separator: '/'}, KeyEncoding{Default: true, Separator: '.'}
	shape, chunks := []int64{100, 20, 30}, []int64{10, 10, 10} // grid 10×2×3
	cases := []struct {
		a      *Array
		coords []int64
		path   string
	}{
		{testArray("t2m", v2dot, shape, chunks), []int64{9, 1, 2}, "t2m/9.1.2"},
		{testArray("", v2dot, shape, chunks), []int64{0, 0, 0}, "0.0.0"},
		{testArray("g/t2m", v2slash, shape, chunks), []int64{3, 0, 2}, "g/t2m/3/0/2"},
		{testArray("t2m", defSlash, shape, chunks), []int64{3, 0, 2}, "t2m/c/3/0/2"},
		{testArray("", defSlash, shape, chunks), []int64{3, 0, 2}, "c/3/0/2"},
		{testArray("t2m", defDot, shape, chunks), []int64{3, 0, 2}, "t2m/c.3.0.2"},
		{testArray("s", v2dot, nil, nil), []int64{}, "s/0"},
		{testArray("s", defSlash, nil, nil), []int64{}, "s/c"},
		{testArray("", defSlash, []int64{1 << 40}, []int64{1}), []int64{1<<40 - 1}, "c/1099511627775"},
	}
	for _, c := range cases {
		p, err := c.a.ChunkFile(c.coords)
		if err != nil || p != c.path {
			t.Errorf("%q %v: %q, %v; want %q", c.a.Path, c.coords, p, err, c.path)
		}
		got, err := c.a.ParseChunkFile(c.path)
		if err != nil || !slices.Equal(got, c.coords) {
			t.Errorf("parse %q: %v, %v; want %v", c.path, got, err, c.coords)
		}
	}
}

// TestChunkFileRejects: paths that are not exactly a chunk key of the
// array are refused with ErrKey.
func TestChunkFileRejects(t *testing.T) {
	dot := testArray("t2m", KeyEncoding{Separator: '.'}, []int64{100, 20}, []int64{10, 10})
	def := testArray("t2m", KeyEncoding{Default: true, Separator: '/'}, []int64{100, 20}, []int64{10, 10})
	scalar := testArray("", KeyEncoding{Separator: '.'}, nil, nil)
	cases := []struct {
		a *Array
		p string
	}{
		{dot, "t2m/1.2"}, {dot, "t2m/10.0"}, {dot, "t2m/01.0"}, {dot, "t2m/1"}, {dot, "t2m/1.0.0"},
		{dot, "t2m/-1.0"}, {dot, "t2m/+1.0"}, {dot, "t2m/1/0"}, {dot, "t2m/1..0"}, {dot, "t2m/1.0."},
		{dot, "t2m/.zattrs"}, {dot, "other/1.0"}, {dot, "t2m1.0"}, {dot, "t2m/ 1.0"}, {dot, "t2m/1.0x"},
		{dot, "t2m/99999999999999999.0"}, {dot, "t2m/"},
		{def, "t2m/1/0"}, {def, "t2m/c.1.0"}, {def, "t2m/c/1"}, {def, "t2m/c/1/0/"}, {def, "t2m/c"}, {def, "t2m/c/00/0"},
		{scalar, "1"}, {scalar, "c"}, {scalar, "0.0"},
	}
	for _, c := range cases {
		if got, err := c.a.ParseChunkFile(c.p); !errors.Is(err, ErrKey) {
			t.Errorf("array %q: %q parsed to %v (%v)", c.a.Path, c.p, got, err)
		}
	}
	if _, err := dot.ChunkFile([]int64{10, 0}); !errors.Is(err, ErrKey) {
		t.Errorf("out-of-grid coords formatted: %v", err)
	}
}

// TestChunkKeys: keys are valid, parse back, and shorten stably when the
// array path cannot be held.
func TestChunkKeys(t *testing.T) {
	a := testArray("era5/t2m", KeyEncoding{Separator: '.'}, []int64{1000, 721, 1440}, []int64{1, 100, 100})
	k, err := a.ChunkKey([]int64{999, 7, 14})
	if err != nil || k != "era5/t2m/c/999/7/14" {
		t.Errorf("key %q %v", k, err)
	}
	if _, err := a.ChunkKey([]int64{1000, 0, 0}); !errors.Is(err, ErrKey) {
		t.Errorf("out-of-grid key: %v", err)
	}
	root := testArray("", KeyEncoding{Separator: '.'}, []int64{10}, []int64{5})
	if k, _ := root.ChunkKey([]int64{1}); k != "c/1" {
		t.Errorf("root key %q", k)
	}
	long := strings.Repeat("deep/", 30) + "t2m"
	for _, p := range []string{long, "with space/t2m", "at@sign", "ünïcode", "~tilde"} {
		b := testArray(p, KeyEncoding{Separator: '.'}, []int64{10, 10}, []int64{1, 1})
		k, err := b.ChunkKey([]int64{9, 9})
		if err != nil || formats.CheckKey(k) != nil || !strings.HasPrefix(k, "~") || !strings.HasSuffix(k, "/c/9/9") {
			t.Errorf("path %q: key %q %v", p, k, err)
		}
		if k2, _ := b.ChunkKey([]int64{9, 9}); k2 != k {
			t.Errorf("path %q: unstable key %q, %q", p, k, k2)
		}
		if prefix, coords, ok := ParseKey(k); !ok || prefix != KeyPrefix(p) || !slices.Equal(coords, []int64{9, 9}) {
			t.Errorf("key %q parsed to %q %v %v", k, prefix, coords, ok)
		}
	}
	if KeyPrefix("a/b") == KeyPrefix("a/c") || KeyPrefix(long) == KeyPrefix(long+"x") {
		t.Error("distinct paths share a prefix")
	}
	many := make([]int64, 32)
	for i := range many {
		many[i] = 1<<40 + int64(i)
	}
	if _, err := ChunkKey("x", many); !errors.Is(err, ErrKey) {
		t.Errorf("a key of 32 13-digit coordinates: %v", err)
	}
}

func TestParseKey(t *testing.T) {
	good := map[string]struct {
		prefix string
		coords []int64
	}{
		"c":          {"", []int64{}},
		"c/0":        {"", []int64{0}},
		"t/c":        {"t", []int64{}},
		"c/c/1":      {"c", []int64{1}},
		"x/c/1/c/2":  {"x/c/1", []int64{2}},
		"a/b/c/3/40": {"a/b", []int64{3, 40}},
	}
	for k, w := range good {
		p, c, ok := ParseKey(k)
		if !ok || p != w.prefix || !slices.Equal(c, w.coords) {
			t.Errorf("%q: %q %v %v", k, p, c, ok)
		}
		if back, err := ChunkKey(p, c); err != nil || back != k {
			t.Errorf("%q formats back to %q (%v)", k, back, err)
		}
	}
	for _, k := range []string{"", "/c", "/c/1", "t/c/01", "t/c/x", "t/c/1/", "t/1/2", "c/-1", "t/c//1", "t2m/3.0.7"} {
		if p, c, ok := ParseKey(k); ok {
			t.Errorf("%q parsed to %q %v", k, p, c)
		}
	}
}

// TestSharder: blocks of about 256 chunks by rank, stable under appends
// (a block depends on the key alone), named validly.
func TestSharder(t *testing.T) {
	s := Sharder{}
	cases := map[string]string{
		"t2m/c/300":               "t2m/b0/256",
		"t2m/c/70000":             "t2m/b65536/69888",
		"t2m/c/17/33":             "t2m/b16/32",
		"t2m/c/5/17/33":           "t2m/b4/16.32",
		"t2m/c/3/5/7/9":           "t2m/b0/4.4.8",
		"t2m/c":                   "t2m/b",
		"c/5/17":                  "b0/16",
		"g/t2m/c/5/17@1f2e":       "g/t2m/b0/16",
		"not a key":               "other",
		"t2m/3.0.7":               "other",
		"~0123456789abcdef/c/1/2": "~0123456789abcdef/b0/0",
	}
	for k, want := range cases {
		if got := s.Shard(k); got != want {
			t.Errorf("Shard(%q) = %q, want %q", k, got, want)
		}
	}
	for r := 1; r <= 40; r++ {
		var sum uint
		for _, b := range BlockBits(r) {
			sum += b
		}
		if sum != 8 {
			t.Errorf("rank %d: %d bits per block", r, sum)
		}
	}
	// Every chunk of a 64×64 grid: 16 shards of 256.
	per := map[string]int{}
	for i := int64(0); i < 64; i++ {
		for j := int64(0); j < 64; j++ {
			k, _ := ChunkKey("a", []int64{i, j})
			per[s.Shard(k)]++
		}
	}
	for n, c := range per {
		if c != 256 {
			t.Errorf("shard %s holds %d chunks", n, c)
		}
	}
	if len(per) != 16 {
		t.Errorf("%d shards", len(per))
	}
}
