package zarr

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// shardOpts chooses how the test writer lays out its shards.
type shardOpts struct {
	start, crc, big bool // index_location start, crc32c, big-endian index
	gap             bool // bytes no entry points at between chunks
	reverse         bool // inner chunks stored in reverse index order
}

func (o shardOpts) String() string {
	return fmt.Sprintf("start=%v,crc=%v,big=%v,gap=%v,reverse=%v", o.start, o.crc, o.big, o.gap, o.reverse)
}

// shardedArrayJSON is the metadata of the test writer's array: 10×12
// uint8 in shards of 4×8, inner chunks of 2×4 (2×2 per shard, 3×2 shards).
func shardedArrayJSON(o shardOpts) string {
	endian, loc, crc := "little", "end", ""
	if o.big {
		endian = "big"
	}
	if o.start {
		loc = "start"
	}
	if o.crc {
		crc = `, {"name": "crc32c"}`
	}
	return fmt.Sprintf(`{"zarr_format": 3, "node_type": "array", "shape": [10, 12], "data_type": "uint8",
 "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 8]}},
 "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
 "fill_value": 0, "dimension_names": ["y", "x"],
 "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [2, 4],
   "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
   "index_codecs": [{"name": "bytes", "configuration": {"endian": %q}}%s],
   "index_location": %q}}]}`, endian, crc, loc)
}

// innerBytes is the stored content of inner chunk (gy, gx) in global
// coordinates, or nil for an empty (fill value) one; lengths vary so that
// offsets do.
func innerBytes(gy, gx int) []byte {
	if (gy*7+gx*3)%5 == 0 {
		return nil
	}
	return bytes.Repeat([]byte{byte(gy*16 + gx)}, 3+gy+2*gx)
}

// writeShardedStore writes, following the sharding_indexed spec, a store
// with a root group and the array grp/temp, and returns each shard file's
// inner chunk bytes by entry (C order over 2×2).
func writeShardedStore(t *testing.T, dir string, o shardOpts) map[string][][]byte {
	t.Helper()
	write := func(p string, data []byte) {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("zarr.json", []byte(`{"zarr_format": 3, "node_type": "group", "attributes": {}}`))
	write("grp/zarr.json", []byte(`{"zarr_format": 3, "node_type": "group"}`))
	write("grp/temp/zarr.json", []byte(shardedArrayJSON(o)))
	out := map[string][][]byte{}
	for sy := 0; sy < 3; sy++ {
		for sx := 0; sx < 2; sx++ {
			var inner [][]byte
			for e := 0; e < 4; e++ {
				inner = append(inner, innerBytes(sy*2+e/2, sx*2+e%2))
			}
			p := fmt.Sprintf("grp/temp/c/%d/%d", sy, sx)
			write(p, layShard(inner, o))
			out[p] = inner
		}
	}
	return out
}

// layShard packs inner chunks and their index as the spec describes.
func layShard(inner [][]byte, o shardOpts) []byte {
	var order binary.ByteOrder = binary.LittleEndian
	if o.big {
		order = binary.BigEndian
	}
	indexLen := 16 * len(inner)
	if o.crc {
		indexLen += 4
	}
	var body []byte
	base := 0
	if o.start {
		base = indexLen
	}
	index := make([]byte, 16*len(inner))
	for k := range inner {
		e := k
		if o.reverse {
			e = len(inner) - 1 - k
		}
		if inner[e] == nil {
			binary.LittleEndian.PutUint64(index[16*e:], ^uint64(0))
			binary.LittleEndian.PutUint64(index[16*e+8:], ^uint64(0))
			continue
		}
		if o.gap {
			body = append(body, "gap"...)
		}
		order.PutUint64(index[16*e:], uint64(base+len(body)))
		order.PutUint64(index[16*e+8:], uint64(len(inner[e])))
		body = append(body, inner[e]...)
	}
	if o.crc {
		index = binary.LittleEndian.AppendUint32(index, crc32.Checksum(index, crc32.MakeTable(crc32.Castagnoli)))
	}
	if o.start {
		return append(index, body...)
	}
	return append(body, index...)
}

func allShardOpts() []shardOpts {
	var out []shardOpts
	for i := 0; i < 32; i++ {
		out = append(out, shardOpts{start: i&1 != 0, crc: i&2 != 0, big: i&4 != 0, gap: i&8 != 0, reverse: i&16 != 0})
	}
	return out
}

// TestShardedStores scans stores of the spec-following writer in every
// layout: the shards are found, each index decodes to exactly the inner
// chunks written (bytes at their places, empties empty), re-encodes to its
// own bytes, and every inner chunk gets a distinct key.
func TestShardedStores(t *testing.T) {
	for _, o := range allShardOpts() {
		t.Run(o.String(), func(t *testing.T) {
			dir := t.TempDir()
			written := writeShardedStore(t, dir, o)
			st, files := checkStore(t, dir)
			if st.Version != 3 || len(st.Nodes) != 3 || st.Unsupported != "" {
				t.Fatalf("store %+v", st)
			}
			if n := roles(files); n[RoleShard] != 6 || n[RoleMeta] != 3 || n[RoleOther] != 0 {
				t.Fatalf("roles %v: %q", n, others(files))
			}
			keys := map[string]bool{}
			for _, f := range files {
				if f.Role != RoleShard {
					continue
				}
				data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.Path)))
				if err != nil {
					t.Fatal(err)
				}
				x := checkShardFile(t, filepath.Join(dir, f.Path), &f)
				for e, c := range x.Chunks {
					want := written[f.Path][e]
					if c.Empty != (want == nil) || (!c.Empty && !bytes.Equal(data[c.Off:c.Off+c.Len], want)) {
						t.Errorf("%s entry %d %v: got %+v", f.Path, e, c.Coords, c)
					}
					k, _ := f.Array.ChunkKey(f.Array.Sharding.GlobalCoords(f.Coords, c.Coords))
					if keys[k] {
						t.Errorf("key %s twice", k)
					}
					keys[k] = true
				}
			}
			if len(keys) != 24 || !keys["grp/temp/c/5/3"] {
				t.Errorf("inner keys: %d, want 24 up to grp/temp/c/5/3", len(keys))
			}
		})
	}
}

// shardingOf parses the writer's array metadata.
func shardingOf(t *testing.T, o shardOpts) *Sharding {
	t.Helper()
	a, _, err := ParseZarrJSON("temp/zarr.json", []byte(shardedArrayJSON(o)))
	if err != nil || a.Sharding == nil {
		t.Fatalf("%v %+v", err, a)
	}
	return a.Sharding
}

// TestShardIndexDamage: a shard whose index does not describe it is
// refused, naming the file and the fault.
func TestShardIndexDamage(t *testing.T) {
	inner := [][]byte{[]byte("aaaa"), []byte("bbbbbb"), nil, []byte("cc")}
	entry := func(data []byte, o shardOpts, e int, off, ln uint64) []byte {
		d := bytes.Clone(data)
		at := len(d) - 16*4
		if o.crc {
			at -= 4
		}
		binary.LittleEndian.PutUint64(d[at+16*e:], off)
		binary.LittleEndian.PutUint64(d[at+16*e+8:], ln)
		return d
	}
	plain, crc := shardOpts{}, shardOpts{crc: true}
	good := layShard(inner, plain)
	goodCRC := layShard(inner, crc)
	cases := []struct {
		name string
		o    shardOpts
		data []byte
		want string
	}{
		{"crc flipped", crc, append(bytes.Clone(goodCRC[:len(goodCRC)-1]), goodCRC[len(goodCRC)-1]^1), "crc32c"},
		{"body changed under crc", crc, entry(goodCRC, crc, 0, 1, 4), "crc32c"},
		{"overlap", plain, entry(good, plain, 1, 2, 6), "overlap"},
		{"past end", plain, entry(good, plain, 3, 10, 1000), "runs past"},
		{"into index", plain, entry(good, plain, 3, 10, 8), "overlaps the index"},
		{"half empty", plain, entry(good, plain, 2, ^uint64(0), 4), "half empty"},
		{"short file", plain, good[:40], "shorter than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := shardingOf(t, shardOpts{crc: c.o.crc})
			s.PerShard = []int64{2, 2}
			_, err := s.ReadIndex("t/c/0/0", bytes.NewReader(c.data), int64(len(c.data)))
			if !errors.Is(err, ErrShard) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "t/c/0/0") {
				t.Errorf("got %v, want ErrShard naming the file and %q", err, c.want)
			}
		})
	}
	s := shardingOf(t, plain)
	if _, err := s.ReadIndex("ok", bytes.NewReader(good), int64(len(good))); err != nil {
		t.Fatalf("undamaged shard: %v", err)
	}
	if _, err := s.EncodeIndex([]InnerChunk{{Coords: []int64{0, 1}}, {Coords: []int64{0, 1}}}); err == nil {
		t.Error("EncodeIndex took an entry twice")
	}
	if _, err := s.EncodeIndex([]InnerChunk{{Coords: []int64{2, 0}}}); err == nil {
		t.Error("EncodeIndex took coordinates outside the shard")
	}
}

// TestShardingNotes: sharding chunkvc cannot see into is a note, not an
// error, and its shard files are whole chunks.
func TestShardingNotes(t *testing.T) {
	base := shardedArrayJSON(shardOpts{})
	cases := map[string]string{
		"transpose first": strings.Replace(base, `"codecs": [{"name": "sharding_indexed"`,
			`"codecs": [{"name": "transpose", "configuration": {"order": [1, 0]}}, {"name": "sharding_indexed"`, 1),
		"compressed index": strings.Replace(base, `"index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}`,
			`"index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "gzip"}`, 1),
	}
	for name, doc := range cases {
		a, _, err := ParseZarrJSON("zarr.json", []byte(doc))
		if err != nil || a.Sharding != nil || a.ShardingNote == "" {
			t.Errorf("%s: %v, sharding %v, note %q", name, err, a.Sharding, a.ShardingNote)
		}
	}
	bad := strings.Replace(base, `"chunk_shape": [2, 4]`, `"chunk_shape": [3, 4]`, 1)
	if _, _, err := ParseZarrJSON("zarr.json", []byte(bad)); err == nil || !strings.Contains(err.Error(), "does not divide") {
		t.Errorf("inner shape not dividing the shard: %v", err)
	}
}
