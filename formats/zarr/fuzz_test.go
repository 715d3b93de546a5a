package zarr

import (
	"bytes"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats"
)

// metaSeeds adds every metadata document of the corpus stores and a few
// hand-made ones.
func metaSeeds(f *testing.F) {
	for _, dir := range corpusStores(f) {
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && isMetaName(d.Name()) {
				if data, err := os.ReadFile(p); err == nil {
					f.Add(data)
				}
			}
			return err
		})
	}
	f.Add([]byte(goodZArray))
	f.Add([]byte(shardedArrayJSON(shardOpts{crc: true})))
	f.Add([]byte(shardedArrayJSON(shardOpts{start: true, big: true})))
	f.Add([]byte(`{"zarr_consolidated_format": 1, "metadata": {".zgroup": {"zarr_format": 2}}}`))
	f.Add([]byte(`{"zarr_format": 2, "shape": [], "chunks": [], "dtype": "|b1", "fill_value": null, "order": "C", "compressor": null, "filters": null}`))
}

// FuzzParseMetadata: no parser panics or over-allocates on any document,
// and every array one accepts has chunk paths and keys that round trip at
// the corners of its grid.
func FuzzParseMetadata(f *testing.F) {
	metaSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = ParseZGroup("g/.zgroup", data)
		_, _ = ParseZAttrs("g/.zattrs", data)
		_, _ = ParseZMetadata(".zmetadata", data)
		_ = IsDraftV3(data)
		if a, err := ParseZArray("g/a/.zarray", data); err == nil {
			_ = a.WithAttrs("g/a/.zattrs", data)
			checkCorners(t, a)
		}
		a, g, err := ParseZarrJSON("g/a/zarr.json", data)
		if err == nil && (a == nil) == (g == nil) {
			t.Fatalf("zarr.json gave array %v and group %v", a, g)
		}
		if a != nil {
			checkCorners(t, a)
		}
	})
}

// checkCorners checks the first and last chunk of a's grid, and that its
// summary reads back.
func checkCorners(t *testing.T, a *Array) {
	checkArraySummary(t, a)
	grid := a.Grid()
	for _, g := range grid {
		if g == 0 {
			return // an empty array has no chunks
		}
	}
	first, last := make([]int64, len(grid)), make([]int64, len(grid))
	for i, g := range grid {
		last[i] = g - 1
	}
	for _, c := range [][]int64{first, last} {
		p, err := a.ChunkFile(c)
		if err != nil {
			t.Fatalf("chunk %v of grid %v: %v", c, grid, err)
		}
		back, err := a.ParseChunkFile(p)
		if err != nil || !slices.Equal(back, c) {
			t.Fatalf("%q parses to %v (%v), want %v", p, back, err, c)
		}
		if k, err := a.ChunkKey(c); err == nil && formats.CheckKey(k) != nil {
			t.Fatalf("invalid key %q", k)
		}
	}
	if s := a.Sharding; s != nil && s.Entries() <= 4096 {
		idx, err := s.EncodeIndex(nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.DecodeIndex("s", idx, int64(len(idx))); err != nil {
			t.Fatalf("an index of empty chunks: %v", err)
		}
	}
}

// fuzzArrays are arrays of every key encoding for FuzzChunkFile.
func fuzzArrays() []*Array {
	shape, chunks := []int64{100, 20, 30}, []int64{10, 10, 10}
	return []*Array{
		testArray("t2m", KeyEncoding{Separator: '.'}, shape, chunks),
		testArray("g/t2m", KeyEncoding{Separator: '/'}, shape, chunks),
		testArray("t2m", KeyEncoding{Default: true, Separator: '/'}, shape, chunks),
		testArray("", KeyEncoding{Default: true, Separator: '.'}, shape, chunks),
		testArray("", KeyEncoding{Separator: '.'}, nil, nil),
		testArray("s", KeyEncoding{Default: true, Separator: '/'}, nil, nil),
	}
}

// FuzzChunkFile: a path an array accepts formats back to itself.
func FuzzChunkFile(f *testing.F) {
	for i, p := range []string{"t2m/9.1.2", "g/t2m/3/0/2", "t2m/c/3/0/2", "c.3.0.2", "0", "s/c", "t2m/01.0.0", "t2m/c/1/0/"} {
		f.Add(p, uint8(i))
	}
	arrays := fuzzArrays()
	f.Fuzz(func(t *testing.T, p string, sel uint8) {
		a := arrays[int(sel)%len(arrays)]
		coords, err := a.ParseChunkFile(p)
		if err != nil {
			return
		}
		back, err := a.ChunkFile(coords)
		if err != nil || back != p {
			t.Fatalf("%q parses to %v, formats back to %q (%v)", p, coords, back, err)
		}
		if _, err := a.ChunkKey(coords); err != nil {
			t.Fatalf("no key for %v: %v", coords, err)
		}
	})
}

// FuzzParseKey: a key ParseKey accepts is one ChunkKey makes, and every
// string gets a valid shard name.
func FuzzParseKey(f *testing.F) {
	for _, k := range []string{"c", "t/c", "c/c/1", "x/c/1/c/2", "a/b/c/3/40", "~0123456789abcdef/c/1/2", "/c/1", "t/c/01"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		// The block word is always valid; the array prefix before it is
		// the key's own (a name a shard path cannot hold makes
		// manifest.EncodeSplit fall back to hash buckets).
		s := (Sharder{}).Shard(key)
		if !shardWord.MatchString(path.Base(s)) {
			t.Fatalf("key %q: shard name %q", key, s)
		}
		prefix, coords, ok := ParseKey(key)
		if !ok {
			return
		}
		if want := prefix + "/"; prefix != "" && !strings.HasPrefix(s, want) {
			t.Fatalf("key %q of array %q: shard name %q", key, prefix, s)
		}
		if formats.CheckKey(key) != nil {
			t.Fatalf("accepted invalid key %q", key)
		}
		if KeyPrefix(prefix) != prefix {
			return // a prefix ChunkKey would hash
		}
		if back, err := ChunkKey(prefix, coords); err != nil || back != key {
			t.Fatalf("%q parses to %q %v, formats back to %q (%v)", key, prefix, coords, back, err)
		}
	})
}

// FuzzShardIndex: decoding any shard file never panics; an accepted index
// re-encodes to its own bytes and its pieces cover the file.
func FuzzShardIndex(f *testing.F) {
	inner := [][]byte{[]byte("aaaa"), nil, []byte("bbbbbb"), []byte("c")}
	for i, o := range allShardOpts() {
		f.Add(layShard(inner, o), uint8(i&7))
	}
	f.Add([]byte(strings.Repeat("\xff", 64)), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, flags uint8) {
		s := &Sharding{PerShard: []int64{2, 2}, IndexAtStart: flags&1 != 0, Checksum: flags&2 != 0, BigEndian: flags&4 != 0}
		if flags&8 != 0 {
			s.PerShard = []int64{int64(flags>>4) + 1}
		}
		size := int64(len(data))
		x, err := s.ReadIndex("f", bytes.NewReader(data), size)
		if err != nil {
			return
		}
		enc, err := s.EncodeIndex(x.Chunks)
		if err != nil || !bytes.Equal(enc, data[x.Off:x.Off+x.Len]) {
			t.Fatalf("index not derivable: %v", err)
		}
		var pos int64
		for _, p := range x.Pieces(size) {
			if p.Off != pos || p.Len <= 0 {
				t.Fatalf("piece %+v at %d", p, pos)
			}
			pos += p.Len
		}
		if pos != size {
			t.Fatalf("pieces end at %d of %d", pos, size)
		}
	})
}
