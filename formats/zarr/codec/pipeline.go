package codec

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
	"strings"
)

// Pipeline decodes the chunks of one array. It is immutable and safe for
// concurrent use.
type Pipeline struct {
	dtype DType
	shape []int // the chunk's shape
	order byte  // the layout Decode returns: the v2 order, or 'C' for v3
	size  int   // decoded bytes of one chunk
	// bytesSteps run in order on the stored bytes: decompressors and
	// checksums, the reverse of the order they were written in.
	bytesSteps []bytesStep
	// filters run next, in order: v2 filters on the raw element bytes.
	filters []filter
	// perm, for v3, maps the serialized array's dimensions to the chunk's
	// (see toC); nil when no transpose applies.
	perm []int
}

// bytesStep turns stored bytes into what the codec before it wrote;
// limit bounds its output.
type bytesStep struct {
	name   string
	decode func(src []byte, limit int) ([]byte, error)
}

// filter undoes a v2 filter in place on the decoded element bytes.
type filter struct {
	name  string
	apply func(b []byte) error
}

// DType is the element type of decoded chunks, byte order included.
func (p *Pipeline) DType() DType { return p.dtype }

// DecodedSize is the size in bytes of one decoded chunk.
func (p *Pipeline) DecodedSize() int { return p.size }

// Decode turns one stored chunk (the whole file or object) into the
// chunk's raw element bytes, in the Pipeline's byte order and layout. A
// chunk that does not decode to exactly DecodedSize bytes is corrupt.
func (p *Pipeline) Decode(stored []byte) (Raw, error) {
	b := stored
	for i, s := range p.bytesSteps {
		limit := MaxDecoded
		if i == len(p.bytesSteps)-1 {
			limit = p.size
		}
		var err error
		if b, err = s.decode(b, limit); err != nil {
			return Raw{}, fmt.Errorf("%s: %w", s.name, err)
		}
	}
	if len(b) != p.size {
		return Raw{}, corruptf("%d decoded bytes, want %d for chunk shape %v of %s", len(b), p.size, p.shape, p.dtype)
	}
	if len(p.bytesSteps) == 0 {
		b = slices.Clone(b) // filters work in place; the caller's bytes stay as they are
	}
	for _, f := range p.filters {
		if err := f.apply(b); err != nil {
			return Raw{}, fmt.Errorf("filter %s: %w", f.name, err)
		}
	}
	if p.perm != nil {
		b = toC(b, p.dtype.Size, p.shape, p.perm)
	}
	return Raw{Data: b, DType: p.dtype, Shape: slices.Clone(p.shape), Order: p.order}, nil
}

// newPipeline checks the chunk shape against dtype and the cap.
func newPipeline(d DType, chunkShape []int, order byte) (*Pipeline, error) {
	n, err := elements(chunkShape)
	if err != nil {
		return nil, err
	}
	if d.Size > 0 && n > MaxDecoded/d.Size {
		return nil, fmt.Errorf("chunk of %d elements of %s is over the %d-byte cap", n, d, MaxDecoded)
	}
	return &Pipeline{dtype: d, shape: slices.Clone(chunkShape), order: order, size: n * d.Size}, nil
}

// NewV2 builds the decoder of a Zarr v2 array from its .zarray fields:
// compressor (an object with "id", or null), filters (a list, or null),
// dtype, order ("C" or "F") and chunks.
func NewV2(compressor, filters, dtype json.RawMessage, order string, chunkShape []int) (*Pipeline, error) {
	d, err := ParseV2DType(dtype)
	if err != nil {
		return nil, err
	}
	if order != "C" && order != "F" {
		return nil, fmt.Errorf("order %q: want C or F", order)
	}
	p, err := newPipeline(d, chunkShape, order[0])
	if err != nil {
		return nil, err
	}
	if c := bytes.TrimSpace(compressor); len(c) > 0 && string(c) != "null" {
		var id struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(c, &id); err != nil || id.ID == "" {
			return nil, fmt.Errorf("compressor %s: no id", short(c))
		}
		s, err := compressorStep(id.ID)
		if err != nil {
			return nil, err
		}
		p.bytesSteps = append(p.bytesSteps, s)
	}
	if f := bytes.TrimSpace(filters); len(f) > 0 && string(f) != "null" {
		var list []json.RawMessage
		if err := json.Unmarshal(f, &list); err != nil {
			return nil, fmt.Errorf("filters %s: %w", short(f), err)
		}
		for i := len(list) - 1; i >= 0; i-- { // written first, undone last
			flt, err := v2Filter(list[i], d)
			if err != nil {
				return nil, err
			}
			p.filters = append(p.filters, flt)
		}
	}
	return p, nil
}

// compressorStep is the decoder of a numcodecs compressor id.
func compressorStep(id string) (bytesStep, error) {
	dec := map[string]func([]byte, int) ([]byte, error){
		"blosc": DecodeBlosc, "zlib": inflate, "gzip": gunzip, "bz2": bunzip, "zstd": unzstd, "lz4": unlz4,
	}[id]
	if dec == nil {
		return bytesStep{}, unsupported("codec", id)
	}
	return bytesStep{name: id, decode: dec}, nil
}

// v2Filter reads one numcodecs filter: delta (with astype equal to the
// dtype) and shuffle are undone here; anything else is unsupported.
func v2Filter(raw json.RawMessage, d DType) (filter, error) {
	var cfg struct {
		ID          string          `json:"id"`
		DType       json.RawMessage `json:"dtype"`
		AsType      json.RawMessage `json:"astype"`
		ElementSize int             `json:"elementsize"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil || cfg.ID == "" {
		return filter{}, fmt.Errorf("filter %s: no id", short(raw))
	}
	switch cfg.ID {
	case "delta":
		fd, err := ParseV2DType(cfg.DType)
		if err != nil {
			return filter{}, err
		}
		if len(cfg.AsType) > 0 && string(cfg.AsType) != "null" {
			at, err := ParseV2DType(cfg.AsType)
			if err != nil || at != fd {
				return filter{}, unsupported("filter", "delta with astype "+short(cfg.AsType))
			}
		}
		if fd != d || !d.Numeric() || d.Kind == 'b' || d.Kind == 'f' && d.Size == 2 {
			return filter{}, unsupported("filter", "delta of "+fd.String()+" on "+d.String())
		}
		return filter{name: "delta", apply: func(b []byte) error { undelta(b, d); return nil }}, nil
	case "shuffle":
		es := cfg.ElementSize
		if es <= 0 {
			es = d.Size
		}
		return filter{name: "shuffle", apply: func(b []byte) error {
			src := slices.Clone(b)
			unshuffle(b, src, es)
			return nil
		}}, nil
	}
	return filter{}, unsupported("filter", cfg.ID)
}

// undelta replaces each element of b by the running sum up to it, in the
// element type's own arithmetic (wrapping integers, float32 for f4); d is
// numeric and not float16.
func undelta(b []byte, d DType) {
	var bo binary.ByteOrder = binary.LittleEndian
	if d.BigEndian {
		bo = binary.BigEndian
	}
	n := len(b) / d.Size
	var acc uint64
	var facc float64
	for i := 0; i < n; i++ {
		e := b[i*d.Size : (i+1)*d.Size]
		switch {
		case d.Kind == 'f' && d.Size == 8:
			facc += number(e, d, bo)
			bo.PutUint64(e, math.Float64bits(facc))
		case d.Kind == 'f' && d.Size == 4:
			facc = float64(float32(facc) + float32(number(e, d, bo)))
			bo.PutUint32(e, math.Float32bits(float32(facc)))
		default:
			acc += readUint(e, bo)
			putUint(e, bo, acc)
		}
	}
}

// NewV3 builds the decoder of a Zarr v3 array from its zarr.json fields:
// codecs, data_type and the regular grid's chunk_shape.
// sharding_indexed and codecs this package does not know are unsupported.
func NewV3(codecs, dataType json.RawMessage, chunkShape []int) (*Pipeline, error) {
	d, err := ParseV3DataType(dataType)
	if err != nil {
		return nil, err
	}
	p, err := newPipeline(d, chunkShape, 'C')
	if err != nil {
		return nil, err
	}
	var list []json.RawMessage
	if err := json.Unmarshal(codecs, &list); err != nil {
		return nil, fmt.Errorf("codecs %s: %w", short(codecs), err)
	}
	perm := identity(len(chunkShape))
	transposed, serialized := false, false
	for _, raw := range list {
		name, cfg, err := codecName(raw)
		if err != nil {
			return nil, err
		}
		switch {
		case name == "transpose":
			if serialized {
				return nil, fmt.Errorf("codec transpose after the array was serialized")
			}
			order, err := transposeOrder(cfg, len(chunkShape))
			if err != nil {
				return nil, err
			}
			next := make([]int, len(order)) // compose: serialized dim i is original dim perm[order[i]]
			for i, o := range order {
				next[i] = perm[o]
			}
			perm, transposed = next, true
		case name == "bytes" || name == "endian":
			if serialized {
				return nil, fmt.Errorf("codec %s: a second array-to-bytes codec", name)
			}
			var c struct {
				Endian string `json:"endian"`
			}
			if len(cfg) > 0 {
				if err := json.Unmarshal(cfg, &c); err != nil {
					return nil, fmt.Errorf("codec bytes: %w", err)
				}
			}
			switch c.Endian {
			case "big":
				p.dtype.BigEndian = d.Size > 1
			case "little", "":
			default:
				return nil, fmt.Errorf("codec bytes: endian %q", c.Endian)
			}
			serialized = true
		default:
			if !serialized {
				return nil, unsupported("codec", name)
			}
			s, err := v3BytesStep(name)
			if err != nil {
				return nil, err
			}
			p.bytesSteps = append(p.bytesSteps, s)
		}
	}
	if !serialized {
		return nil, fmt.Errorf("codecs %s: no array-to-bytes codec", short(codecs))
	}
	slices.Reverse(p.bytesSteps) // written first, undone last
	if transposed && !slices.Equal(perm, identity(len(perm))) {
		p.perm = perm
	}
	return p, nil
}

// codecName reads a v3 codec entry: {"name":..., "configuration":...} or
// a bare name.
func codecName(raw json.RawMessage) (string, json.RawMessage, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil && s != "" {
		return s, nil, nil
	}
	var c struct {
		Name          string          `json:"name"`
		Configuration json.RawMessage `json:"configuration"`
	}
	if err := json.Unmarshal(raw, &c); err != nil || c.Name == "" {
		return "", nil, fmt.Errorf("codec %s: no name", short(raw))
	}
	return c.Name, c.Configuration, nil
}

// transposeOrder reads a transpose codec's order: a permutation, or the
// early drafts' "C" (none) and "F" (reverse).
func transposeOrder(cfg json.RawMessage, nd int) ([]int, error) {
	var c struct {
		Order json.RawMessage `json:"order"`
	}
	if err := json.Unmarshal(cfg, &c); err != nil {
		return nil, fmt.Errorf("codec transpose: %w", err)
	}
	var s string
	if json.Unmarshal(c.Order, &s) == nil {
		switch s {
		case "C":
			return identity(nd), nil
		case "F":
			return reversed(nd), nil
		}
		return nil, fmt.Errorf("codec transpose: order %q", s)
	}
	var order []int
	if err := json.Unmarshal(c.Order, &order); err != nil || len(order) != nd {
		return nil, fmt.Errorf("codec transpose: order %s is not a permutation of %d dimensions", short(c.Order), nd)
	}
	seen := make([]bool, nd)
	for _, o := range order {
		if o < 0 || o >= nd || seen[o] {
			return nil, fmt.Errorf("codec transpose: order %v is not a permutation", order)
		}
		seen[o] = true
	}
	return order, nil
}

// v3BytesStep is the decoder of a v3 bytes-to-bytes codec.
func v3BytesStep(name string) (bytesStep, error) {
	switch name {
	case "gzip", "zstd", "blosc":
		return compressorStep(name)
	case "crc32c":
		return bytesStep{name: name, decode: checkCRC32C}, nil
	}
	if id, ok := strings.CutPrefix(name, "numcodecs."); ok {
		switch id {
		case "zlib", "gzip", "bz2", "zstd", "lz4", "blosc":
			s, err := compressorStep(id)
			s.name = name
			return s, err
		}
	}
	return bytesStep{}, unsupported("codec", name)
}

// checkCRC32C verifies and strips the crc32c codec's trailing checksum:
// CRC-32C (Castagnoli) of the bytes before it, little endian.
func checkCRC32C(src []byte, limit int) ([]byte, error) {
	if len(src) < 4 {
		return nil, corruptf("%d bytes, no room for a checksum", len(src))
	}
	body := src[:len(src)-4]
	if len(body) > limit {
		return nil, corruptf("%d bytes, more than %d", len(body), limit)
	}
	want := binary.LittleEndian.Uint32(src[len(body):])
	if got := crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)); got != want {
		return nil, corruptf("crc32c %08x, stored %08x", got, want)
	}
	return body, nil
}

// identity is the permutation 0, 1, ..., n-1.
func identity(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	return p
}
