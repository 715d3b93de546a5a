package zarr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// Metadata document names.
const (
	ZArray    = ".zarray"
	ZGroup    = ".zgroup"
	ZAttrs    = ".zattrs"
	ZMetadata = ".zmetadata"
	ZarrJSON  = "zarr.json"
)

// Bounds that keep every computation on a grid free of overflow and every
// allocation proportional to the input.
const (
	// MaxRank bounds an array's number of dimensions.
	MaxRank = 32
	// MaxDim bounds one dimension of a shape or chunk shape.
	MaxDim = 1 << 53
	// MaxGridChunks bounds the number of chunks (or shards) in a grid.
	MaxGridChunks = 1 << 48
	// MaxShardEntries bounds the inner chunks of one shard (an index of
	// 64 MiB).
	MaxShardEntries = 1 << 22
	// MaxMetaSize bounds a metadata document Scan reads.
	MaxMetaSize = 64 << 20
)

// ErrMetadata is wrapped by every error about a malformed or unsupported
// metadata document.
var ErrMetadata = errors.New("zarr metadata")

// KeyEncoding says how an array spells its chunk keys: v2 and the v3 "v2"
// encoding join the grid coordinates with Separator ("0.3.1"); the v3
// "default" encoding prefixes "c" ("c/0/3/1"). A rank-0 array's only chunk
// is "0" or "c".
type KeyEncoding struct {
	Default   bool // v3 "default": a leading "c"
	Separator byte // '.' or '/'
}

// Codec is one codec (v3) or compressor/filter (v2) as written: its name
// ("id" in v2) and its raw JSON.
type Codec struct {
	Name string
	// Config is the v3 "configuration" object (nil when absent); for v2,
	// the whole object, "id" included.
	Config json.RawMessage
}

// Array is the metadata of one array, v2 or v3, as chunkvc needs it: the
// grid, the key spelling and what decides the chunk bytes. Fields that are
// only carried (dtype, fill value, codecs) stay raw JSON.
type Array struct {
	Path    string // store-relative, slash-separated; "" for a root array
	Version int    // 2 or 3
	Shape   []int64
	// ChunkShape is the grid's chunk shape: v2 "chunks", v3 the regular
	// chunk grid's chunk_shape (the shard shape when sharded).
	ChunkShape []int64
	// DType is v2 "dtype" or v3 "data_type" as written.
	DType     json.RawMessage
	FillValue json.RawMessage
	Order     byte // 'C' or 'F' (v2); v3 is always 'C' (a transpose codec instead)
	// Compressor (nil for none) and Filters are v2's; Codecs are v3's.
	Compressor *Codec
	Filters    []Codec
	Codecs     []Codec
	Keys       KeyEncoding
	// DimNames are v3 dimension_names or v2's _ARRAY_DIMENSIONS attribute
	// (merged by Scan or WithAttrs); nil when absent, "" for a null name.
	DimNames []string
	// Attrs is v3 "attributes" or the v2 .zattrs object (raw; nil if none).
	Attrs json.RawMessage
	// Sharding describes a v3 sharding_indexed array whose shards chunkvc
	// can see into; nil otherwise.
	Sharding *Sharding
	// ShardingNote says why a sharding_indexed array's shard files are kept
	// whole (Sharding nil), e.g. more codecs around it.
	ShardingNote string
}

// Grid returns the number of chunks (shards, when sharded) per dimension.
func (a *Array) Grid() []int64 {
	g := make([]int64, len(a.Shape))
	for i, n := range a.Shape {
		g[i] = ceilDiv(n, a.ChunkShape[i])
	}
	return g
}

// Rank is the array's number of dimensions.
func (a *Array) Rank() int { return len(a.Shape) }

func ceilDiv(n, d int64) int64 { return (n + d - 1) / d }

// metaErr names the file and what is wrong with it.
func metaErr(name, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrMetadata, name, fmt.Sprintf(format, args...))
}

// decodeObject unmarshals data, which must be one JSON object, into v.
func decodeObject(name string, data []byte, v any) error {
	d := bytes.TrimSpace(data)
	if len(d) == 0 || d[0] != '{' {
		return metaErr(name, "not a JSON object")
	}
	if err := json.Unmarshal(d, v); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrMetadata, name, err)
	}
	return nil
}

// checkGrid validates a shape and chunk shape and bounds the grid they make.
func checkGrid(name string, shape, chunks []int64, chunksField string) error {
	if shape == nil {
		return metaErr(name, "no shape")
	}
	if chunks == nil {
		return metaErr(name, "no %s", chunksField)
	}
	if len(shape) > MaxRank {
		return metaErr(name, "rank %d over %d", len(shape), MaxRank)
	}
	if len(chunks) != len(shape) {
		return metaErr(name, "%s has rank %d, shape has rank %d", chunksField, len(chunks), len(shape))
	}
	total := int64(1)
	for i := range shape {
		if shape[i] < 0 || shape[i] > MaxDim {
			return metaErr(name, "shape[%d] = %d is not in 0..2^53", i, shape[i])
		}
		if chunks[i] <= 0 || chunks[i] > MaxDim {
			return metaErr(name, "%s[%d] = %d is not in 1..2^53", chunksField, i, chunks[i])
		}
		g := ceilDiv(shape[i], chunks[i])
		if g != 0 && total > MaxGridChunks/g {
			return metaErr(name, "grid of shape %v by %s %v has over 2^48 chunks", shape, chunksField, chunks)
		}
		total *= g
	}
	return nil
}

// isNull reports whether raw is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || bytes.Equal(t, []byte("null"))
}

type zarrayDoc struct {
	ZarrFormat json.RawMessage   `json:"zarr_format"`
	Shape      []int64           `json:"shape"`
	Chunks     []int64           `json:"chunks"`
	DType      json.RawMessage   `json:"dtype"`
	Compressor json.RawMessage   `json:"compressor"`
	FillValue  json.RawMessage   `json:"fill_value"`
	Order      *string           `json:"order"`
	Filters    []json.RawMessage `json:"filters"`
	Separator  *string           `json:"dimension_separator"`
}

// ParseZArray parses a v2 .zarray document; name (the file's store path)
// is used in errors and its directory becomes the array's Path.
func ParseZArray(name string, data []byte) (*Array, error) {
	var d zarrayDoc
	if err := decodeObject(name, data, &d); err != nil {
		return nil, err
	}
	if err := checkFormat(name, d.ZarrFormat, 2); err != nil {
		return nil, err
	}
	if err := checkGrid(name, d.Shape, d.Chunks, "chunks"); err != nil {
		return nil, err
	}
	a := &Array{Path: dirOf(name), Version: 2, Shape: d.Shape, ChunkShape: d.Chunks,
		DType: d.DType, FillValue: d.FillValue, Keys: KeyEncoding{Separator: '.'}}
	if isNull(d.DType) {
		return nil, metaErr(name, "no dtype")
	}
	if d.FillValue == nil {
		return nil, metaErr(name, "no fill_value")
	}
	switch {
	case d.Order == nil:
		return nil, metaErr(name, "no order")
	case *d.Order == "C" || *d.Order == "F":
		a.Order = (*d.Order)[0]
	default:
		return nil, metaErr(name, "order %q is neither C nor F", *d.Order)
	}
	if d.Separator != nil {
		if *d.Separator != "." && *d.Separator != "/" {
			return nil, metaErr(name, "dimension_separator %q is neither . nor /", *d.Separator)
		}
		a.Keys.Separator = (*d.Separator)[0]
	}
	if !isNull(d.Compressor) {
		c, err := v2Codec(name, "compressor", d.Compressor)
		if err != nil {
			return nil, err
		}
		a.Compressor = &c
	}
	for i, f := range d.Filters {
		c, err := v2Codec(name, fmt.Sprintf("filters[%d]", i), f)
		if err != nil {
			return nil, err
		}
		a.Filters = append(a.Filters, c)
	}
	return a, nil
}

// v2Codec reads a numcodecs configuration: an object with a string "id".
func v2Codec(name, field string, raw json.RawMessage) (Codec, error) {
	var c struct {
		ID *string `json:"id"`
	}
	if err := decodeObject(name+" "+field, raw, &c); err != nil {
		return Codec{}, err
	}
	if c.ID == nil || *c.ID == "" {
		return Codec{}, metaErr(name, "%s has no id", field)
	}
	return Codec{Name: *c.ID, Config: raw}, nil
}

// checkFormat requires zarr_format to be the number want.
func checkFormat(name string, raw json.RawMessage, want int) error {
	var v float64
	if raw == nil {
		return metaErr(name, "no zarr_format")
	}
	if err := json.Unmarshal(raw, &v); err != nil || v != float64(want) {
		return metaErr(name, "zarr_format %s is not %d", bytes.TrimSpace(raw), want)
	}
	return nil
}

// Group is a group node's metadata.
type Group struct {
	Path    string
	Version int
	Attrs   json.RawMessage // v3 attributes; v2 .zattrs (nil if none)
}

// ParseZGroup parses a v2 .zgroup document.
func ParseZGroup(name string, data []byte) (*Group, error) {
	var d struct {
		ZarrFormat json.RawMessage `json:"zarr_format"`
	}
	if err := decodeObject(name, data, &d); err != nil {
		return nil, err
	}
	if err := checkFormat(name, d.ZarrFormat, 2); err != nil {
		return nil, err
	}
	return &Group{Path: dirOf(name), Version: 2}, nil
}

// ParseZAttrs checks a v2 .zattrs document (a JSON object) and returns the
// _ARRAY_DIMENSIONS names it holds (xarray's convention), nil when absent.
func ParseZAttrs(name string, data []byte) (dims []string, err error) {
	var d struct {
		Dims json.RawMessage `json:"_ARRAY_DIMENSIONS"`
	}
	if err := decodeObject(name, data, &d); err != nil {
		return nil, err
	}
	if d.Dims == nil {
		return nil, nil
	}
	if dims, err = parseNames(d.Dims); err != nil {
		return nil, metaErr(name, "_ARRAY_DIMENSIONS: %v", err)
	}
	return dims, nil
}

// parseNames reads a JSON list of strings or nulls (null reads as "").
func parseNames(raw json.RawMessage) ([]string, error) {
	var names []*string
	if err := json.Unmarshal(raw, &names); err != nil {
		return nil, errors.New("not a list of names")
	}
	out := make([]string, len(names))
	for i, n := range names {
		if n != nil {
			out[i] = *n
		}
	}
	return out, nil
}

// WithAttrs merges a v2 .zattrs document into a: its raw bytes and its
// _ARRAY_DIMENSIONS, which must name every dimension.
func (a *Array) WithAttrs(name string, data []byte) error {
	dims, err := ParseZAttrs(name, data)
	if err != nil {
		return err
	}
	if dims != nil && len(dims) != len(a.Shape) {
		return metaErr(name, "_ARRAY_DIMENSIONS names %d dimensions, the array has %d", len(dims), len(a.Shape))
	}
	a.Attrs = json.RawMessage(bytes.TrimSpace(data))
	if a.Version == 2 && dims != nil {
		a.DimNames = dims
	}
	return nil
}

// ParseZMetadata parses v2 consolidated metadata (.zmetadata): the
// documents it holds by store key ("t2m/.zarray"), raw.
func ParseZMetadata(name string, data []byte) (map[string]json.RawMessage, error) {
	var d struct {
		Format   json.RawMessage            `json:"zarr_consolidated_format"`
		Metadata map[string]json.RawMessage `json:"metadata"`
	}
	if err := decodeObject(name, data, &d); err != nil {
		return nil, err
	}
	if err := checkFormatField(name, "zarr_consolidated_format", d.Format, 1); err != nil {
		return nil, err
	}
	if d.Metadata == nil {
		return nil, metaErr(name, "no metadata object")
	}
	return d.Metadata, nil
}

func checkFormatField(name, field string, raw json.RawMessage, want float64) error {
	var v float64
	if raw == nil || json.Unmarshal(raw, &v) != nil || v != want || math.IsNaN(v) {
		return metaErr(name, "%s is not %v", field, want)
	}
	return nil
}

// dirOf is the store path of the directory holding the document name.
func dirOf(name string) string {
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '/' {
			return name[:i]
		}
	}
	return ""
}
