package codec

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"math"
	"slices"
	"strings"
	"testing"
)

// bloscRaw builds a valid Blosc chunk whose streams are stored raw (a
// stream's length equals its decoded size), shuffled as asked: what the
// C library writes for data it cannot compress without memcpying.
func bloscRaw(data []byte, typesize, blocksize int, shuffle byte) []byte {
	n := len(data)
	nblocks := (n + blocksize - 1) / blocksize
	out := make([]byte, 16+4*nblocks)
	out[0], out[1], out[2], out[3] = 2, 1, shuffle|bloscNoSplit, byte(typesize)
	binary.LittleEndian.PutUint32(out[4:], uint32(n))
	binary.LittleEndian.PutUint32(out[8:], uint32(blocksize))
	for j := 0; j < nblocks; j++ {
		binary.LittleEndian.PutUint32(out[16+4*j:], uint32(len(out)))
		block := data[j*blocksize : min((j+1)*blocksize, n)]
		enc := slices.Clone(block)
		if shuffle&bloscShuffle != 0 && typesize > 1 {
			q := len(block) / typesize
			for i := 0; i < q; i++ {
				for k := 0; k < typesize; k++ {
					enc[k*q+i] = block[i*typesize+k]
				}
			}
		}
		out = binary.LittleEndian.AppendUint32(out, uint32(len(enc)))
		out = append(out, enc...)
	}
	binary.LittleEndian.PutUint32(out[12:], uint32(len(out)))
	return out
}

func TestBloscRawStreams(t *testing.T) {
	data := make([]byte, 1000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	for _, shuffle := range []byte{0, bloscShuffle} {
		got, err := DecodeBlosc(bloscRaw(data, 4, 96, shuffle), MaxDecoded)
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("shuffle %d: %v, equal %v", shuffle, err, bytes.Equal(got, data))
		}
	}
}

// TestBloscRefuses checks that damaged headers and streams are refused
// with ErrCorrupt (or ErrUnsupported for Blosc2), never a panic.
func TestBloscRefuses(t *testing.T) {
	good := bloscRaw(bytes.Repeat([]byte("coordinates "), 50), 4, 128, bloscShuffle)
	if _, err := DecodeBlosc(good, MaxDecoded); err != nil {
		t.Fatal(err)
	}
	edit := func(f func(b []byte) []byte) []byte { return f(slices.Clone(good)) }
	put := func(off int, v uint32) func([]byte) []byte {
		return func(b []byte) []byte { binary.LittleEndian.PutUint32(b[off:], v); return b }
	}
	cases := map[string][]byte{
		"short":             good[:10],
		"version 0":         edit(func(b []byte) []byte { b[0] = 0; return b }),
		"typesize 0":        edit(func(b []byte) []byte { b[3] = 0; return b }),
		"nbytes over cap":   edit(put(4, MaxDecoded+1)),
		"nbytes over limit": edit(put(4, 1<<20)),
		"cbytes past end":   edit(put(12, uint32(len(good)+1))),
		"cbytes in header":  edit(put(12, 8)),
		"blocksize 0":       edit(put(8, 0)),
		"block offset":      edit(put(16, 3)),
		"block offset end":  edit(put(16, uint32(len(good)))),
		"stream length":     edit(put(16+4*5, 1<<30)),
		"stream negative":   edit(put(16+4*5, 0xffffffff)),
		"truncated": edit(func(b []byte) []byte {
			b = b[:len(b)-5]
			binary.LittleEndian.PutUint32(b[12:], uint32(len(b)))
			return b
		}),
		"both shuffles":      edit(func(b []byte) []byte { b[2] |= bloscBitShuffle; return b }),
		"memcpyed too short": edit(func(b []byte) []byte { b[2] |= bloscMemcpyed; return b }),
		"codec 6":            edit(func(b []byte) []byte { b[2] |= 6 << 5; return b }),
		"blosc2":             edit(func(b []byte) []byte { b[0] = 5; return b }),
	}
	for name, b := range cases {
		_, err := DecodeBlosc(b, 1000)
		if err == nil {
			t.Errorf("%s: decoded", name)
			continue
		}
		if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: %v is neither ErrCorrupt nor ErrUnsupported", name, err)
		}
	}
	var u *UnsupportedError
	if _, err := DecodeBlosc(cases["blosc2"], MaxDecoded); !errors.As(err, &u) || u.Kind != "blosc format" {
		t.Errorf("blosc2: %v, want an UnsupportedError", err)
	}
}

func TestBlosclzHandWritten(t *testing.T) {
	// literal "abc", a match of 3 at distance 3, a match of 4 at
	// distance 1 (a run of 'c'), literal "z".
	src := []byte{0x02, 'a', 'b', 'c', 0x20, 0x02, 0x40, 0x00, 0x00, 'z'}
	dst := make([]byte, 11)
	if err := blosclzDecode(dst, src); err != nil || string(dst) != "abcabccccc"+"z" {
		t.Fatalf("got %q, %v", dst, err)
	}
	for _, bad := range [][]byte{{}, {0x05, 'a'}, {0x00, 'a', 0x20, 0x05}, {0x00, 'a', 0xe0}, {0x00, 'a', 0x3f, 0xff, 0x00}} {
		if err := blosclzDecode(make([]byte, 11), bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%x: %v, want ErrCorrupt", bad, err)
		}
	}
}

func TestUnsupported(t *testing.T) {
	f8 := json.RawMessage(`"<f8"`)
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"zfpy", second(NewV2(json.RawMessage(`{"id":"zfpy","mode":4}`), nil, f8, "C", []int{4}))},
		{"quantize", second(NewV2(nil, json.RawMessage(`[{"id":"quantize","digits":2,"dtype":"<f8"}]`), f8, "C", []int{4}))},
		{"|O", second(NewV2(nil, json.RawMessage(`[{"id":"vlen-utf8"}]`), json.RawMessage(`"|O"`), "C", []int{4}))},
		{"sharding_indexed", second(NewV3(json.RawMessage(`[{"name":"sharding_indexed","configuration":{}}]`), json.RawMessage(`"float64"`), []int{4}))},
		{"numcodecs.pcodec", second(NewV3(json.RawMessage(`[{"name":"numcodecs.pcodec"}]`), json.RawMessage(`"float32"`), []int{4}))},
		{"numcodecs.lzma", second(NewV3(json.RawMessage(`[{"name":"bytes"},{"name":"numcodecs.lzma"}]`), json.RawMessage(`"float32"`), []int{4}))},
		{"string", second(NewV3(json.RawMessage(`[{"name":"vlen-utf8"}]`), json.RawMessage(`"string"`), []int{4}))},
	} {
		var u *UnsupportedError
		if !errors.As(tc.err, &u) || u.Name != tc.name || !errors.Is(tc.err, ErrUnsupported) {
			t.Errorf("%s: %v, want an UnsupportedError naming it", tc.name, tc.err)
		}
	}
}

func second(_ *Pipeline, err error) error { return err }

// TestDecodeBounded: a stream that inflates past the chunk's size is
// refused, whatever it would inflate to.
func TestDecodeBounded(t *testing.T) {
	var zb, gb bytes.Buffer
	zw := zlib.NewWriter(&zb)
	gw := gzip.NewWriter(&gb)
	zeros := make([]byte, 8<<20)
	_, _ = zw.Write(zeros)
	_, _ = gw.Write(zeros)
	_ = zw.Close()
	_ = gw.Close()
	for id, stored := range map[string][]byte{"zlib": zb.Bytes(), "gzip": gb.Bytes()} {
		p, err := NewV2(json.RawMessage(`{"id":"`+id+`"}`), nil, json.RawMessage(`"<f8"`), "C", []int{10, 10})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Decode(stored); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "more than 800") {
			t.Errorf("%s: %v, want a refusal past 800 bytes", id, err)
		}
	}
	lz := binary.LittleEndian.AppendUint32(nil, MaxDecoded+1)
	if _, err := unlz4(append(lz, 0), MaxDecoded); !errors.Is(err, ErrCorrupt) {
		t.Errorf("lz4 size header over the cap: %v", err)
	}
	if _, err := NewV2(nil, nil, json.RawMessage(`"<f8"`), "C", []int{1 << 20, 1 << 20}); err == nil {
		t.Error("a 8 TiB chunk shape was accepted")
	}
}

// TestV3TransposeCRC: a 2x3x4 uint16 array transposed twice, serialized
// big endian, gzipped and checksummed, decodes back to C order.
func TestV3TransposeCRC(t *testing.T) {
	shape := []int{2, 3, 4}
	p1, p2 := []int{2, 0, 1}, []int{1, 2, 0}
	// The serialized array's dimension i is the original's dimension
	// p1[p2[i]]; element values are their C-order index in the original.
	perm := []int{p1[p2[0]], p1[p2[1]], p1[p2[2]]}
	tshape := []int{shape[perm[0]], shape[perm[1]], shape[perm[2]]}
	var ser []byte
	for a := 0; a < tshape[0]; a++ {
		for b := 0; b < tshape[1]; b++ {
			for c := 0; c < tshape[2]; c++ {
				var idx [3]int
				idx[perm[0]], idx[perm[1]], idx[perm[2]] = a, b, c
				ser = binary.BigEndian.AppendUint16(ser, uint16(idx[0]*12+idx[1]*4+idx[2]))
			}
		}
	}
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, _ = w.Write(ser)
	_ = w.Close()
	stored := binary.LittleEndian.AppendUint32(gz.Bytes(), crc32.Checksum(gz.Bytes(), crc32.MakeTable(crc32.Castagnoli)))
	codecs := json.RawMessage(`[{"name":"transpose","configuration":{"order":[2,0,1]}},
		{"name":"transpose","configuration":{"order":[1,2,0]}},
		{"name":"bytes","configuration":{"endian":"big"}},{"name":"gzip","configuration":{"level":1}},{"name":"crc32c"}]`)
	p, err := NewV3(codecs, json.RawMessage(`"uint16"`), shape)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := p.Decode(stored)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := raw.Float64()
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vals {
		if v != float64(i) {
			t.Fatalf("value %d is %v; all: %v", i, v, vals)
		}
	}
	stored[3] ^= 1
	if _, err := p.Decode(stored); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "crc32c") {
		t.Errorf("damaged chunk: %v, want a crc32c mismatch", err)
	}
}

func TestFloat64Kinds(t *testing.T) {
	for _, tc := range []struct {
		dtype string
		data  []byte
		want  []float64
	}{
		{`"|i1"`, []byte{0xff, 0x80, 0x7f}, []float64{-1, -128, 127}},
		{`">i2"`, []byte{0xff, 0xfe, 0x01, 0x00}, []float64{-2, 256}},
		{`"<u8"`, binary.LittleEndian.AppendUint64(nil, 1<<40), []float64{1 << 40}},
		{`"<f2"`, []byte{0x00, 0x3c, 0x00, 0xc0, 0x00, 0x7c}, []float64{1, -2, math.Inf(1)}},
		{`">f4"`, binary.BigEndian.AppendUint32(nil, math.Float32bits(-0.5)), []float64{-0.5}},
		{`"|b1"`, []byte{1, 0}, []float64{1, 0}},
	} {
		d, err := ParseV2DType(json.RawMessage(tc.dtype))
		if err != nil {
			t.Fatal(err)
		}
		got, err := Raw{Data: tc.data, DType: d, Shape: []int{len(tc.want)}, Order: 'C'}.Float64()
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, %v; want %v", tc.dtype, got, err, tc.want)
		}
	}
	// F order: a 2x3 array stored column by column.
	f := Raw{Data: []byte{0, 3, 1, 4, 2, 5}, DType: DType{Kind: 'u', Size: 1}, Shape: []int{2, 3}, Order: 'F'}
	if got, _ := f.Float64(); !slices.Equal(got, []float64{0, 1, 2, 3, 4, 5}) {
		t.Errorf("F order: %v", got)
	}
	if _, err := (Raw{Data: []byte{1}, DType: DType{Kind: 'c', Size: 8}, Shape: []int{1}}).Float64(); !errors.Is(err, ErrUnsupported) {
		t.Errorf("complex: %v", err)
	}
}
