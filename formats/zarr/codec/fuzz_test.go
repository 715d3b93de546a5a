package codec

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// corpusSeeds adds the chunk files of the corpus's Blosc stores, when the
// corpus is at hand (fuzzing never requires it).
func corpusSeeds(f *testing.F) {
	root := filepath.Join("..", "..", "..", "..", "shared", "corpus", "zarr")
	if d := os.Getenv("CHUNKVC_CORPUS"); d != "" {
		root = filepath.Join(d, "zarr")
	}
	for _, store := range []string{"zarrs__zarrs__v2__array_blosc_C.zarr", "zarrs__zarrs__v3__array_zstd.zarr", "zarrs__zarrs__v2__array_gzip_C.zarr"} {
		for _, key := range []string{"0.0", "1.1"} {
			if b, err := os.ReadFile(filepath.Join(root, store, key)); err == nil {
				f.Add(b)
			}
		}
	}
}

// FuzzBlosc: no panic, no allocation past the limit, and a chunk that
// decodes has exactly the size its header declares.
func FuzzBlosc(f *testing.F) {
	corpusSeeds(f)
	data := []byte("lat lon 12.5 12.75 13.0 13.25 13.5 13.75 14.0 14.25 14.5 14.75 15.0 15.25")
	f.Add(bloscRaw(data, 4, 32, bloscShuffle))
	f.Add(bloscRaw(data, 8, 64, 0))
	f.Add(bloscRaw(data, 2, 16, bloscBitShuffle))
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := DecodeBlosc(b, 1<<20)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupported) {
				t.Fatalf("error %v is neither ErrCorrupt nor ErrUnsupported", err)
			}
			return
		}
		h, err := ParseBloscHeader(b)
		if err != nil || len(out) != h.NBytes || len(out) > 1<<20 {
			t.Fatalf("decoded %d bytes, header %+v, %v", len(out), h, err)
		}
	})
}

// fuzzMeta are the pipelines FuzzPipeline decodes with, picked by the
// first input byte: every bytes-to-bytes codec, filters and transposes.
var fuzzMeta = []struct {
	v3              bool
	codecs, filters string
	dtype           string
	order           string
	shape           []int
}{
	{false, `{"id":"blosc","cname":"lz4","clevel":5,"shuffle":1}`, `null`, `"<f4"`, "C", []int{5, 5}},
	{false, `{"id":"zlib","level":1}`, `[{"id":"delta","dtype":"<i4"}]`, `"<i4"`, "F", []int{3, 4}},
	{false, `{"id":"gzip"}`, `[{"id":"shuffle","elementsize":8}]`, `">f8"`, "C", []int{6}},
	{false, `{"id":"zstd","level":3}`, `null`, `"|u1"`, "C", []int{16}},
	{false, `{"id":"bz2"}`, `null`, `"<i2"`, "C", []int{8}},
	{false, `{"id":"lz4"}`, `null`, `"<f8"`, "F", []int{2, 3}},
	{false, `null`, `null`, `"<f8"`, "F", []int{2, 2}},
	{true, `[{"name":"transpose","configuration":{"order":[1,0]}},{"name":"bytes","configuration":{"endian":"little"}},{"name":"blosc","configuration":{"cname":"zstd"}}]`, "", `"float32"`, "", []int{5, 5}},
	{true, `[{"name":"bytes","configuration":{"endian":"big"}},{"name":"gzip"},{"name":"crc32c"}]`, "", `"int16"`, "", []int{4, 4}},
	{true, `[{"name":"bytes"},{"name":"numcodecs.lz4"}]`, "", `"uint8"`, "", []int{10}},
}

// FuzzPipeline: no panic and no runaway allocation decoding any stored
// bytes through any of the pipelines; a decoded chunk has exactly the
// chunk's size and converts to numbers without panicking.
func FuzzPipeline(f *testing.F) {
	corpusSeeds(f)
	f.Add([]byte{0, 2, 1, 33, 4, 100, 0, 0, 0, 100, 0, 0, 0, 116, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		m := fuzzMeta[int(b[0])%len(fuzzMeta)]
		var p *Pipeline
		var err error
		if m.v3 {
			p, err = NewV3(json.RawMessage(m.codecs), json.RawMessage(m.dtype), m.shape)
		} else {
			p, err = NewV2(json.RawMessage(m.codecs), json.RawMessage(m.filters), json.RawMessage(m.dtype), m.order, m.shape)
		}
		if err != nil {
			t.Fatal(err)
		}
		raw, err := p.Decode(b[1:])
		if err != nil {
			return
		}
		if len(raw.Data) != p.DecodedSize() {
			t.Fatalf("decoded %d bytes, want %d", len(raw.Data), p.DecodedSize())
		}
		if _, err := raw.Float64(); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzMetadata: no panic on any codecs list or data type, and a pipeline
// that builds decodes an empty chunk without panicking.
func FuzzMetadata(f *testing.F) {
	for _, m := range fuzzMeta {
		f.Add(m.v3, m.codecs, m.filters, m.dtype)
	}
	f.Fuzz(func(t *testing.T, v3 bool, codecs, filters, dtype string) {
		var p *Pipeline
		var err error
		if v3 {
			p, err = NewV3(json.RawMessage(codecs), json.RawMessage(dtype), []int{3, 2})
		} else {
			p, err = NewV2(json.RawMessage(codecs), json.RawMessage(filters), json.RawMessage(dtype), "F", []int{3, 2})
		}
		if err == nil {
			_, _ = p.Decode(nil)
		}
	})
}
