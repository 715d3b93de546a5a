package zarr

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// ShardingCodec is the v3 sharding codec's name.
const ShardingCodec = "sharding_indexed"

type namedConfig struct {
	Name   string          `json:"name"`
	Config json.RawMessage `json:"configuration"`
}

type zarrJSONDoc struct {
	ZarrFormat      json.RawMessage   `json:"zarr_format"`
	NodeType        *string           `json:"node_type"`
	Shape           []int64           `json:"shape"`
	DataType        json.RawMessage   `json:"data_type"`
	ChunkGrid       *namedConfig      `json:"chunk_grid"`
	ChunkKey        *namedConfig      `json:"chunk_key_encoding"`
	FillValue       json.RawMessage   `json:"fill_value"`
	Codecs          []json.RawMessage `json:"codecs"`
	Attributes      json.RawMessage   `json:"attributes"`
	DimensionNames  json.RawMessage   `json:"dimension_names"`
	StorageTransfrm []json.RawMessage `json:"storage_transformers"`
}

// IsDraftV3 reports whether a root zarr.json is the pre-release v3 "entry
// point" document (GDAL 3.6's FORMAT=ZARR_V3: a string zarr_format or a
// metadata_encoding, with meta/root... beside it), which this package does
// not read.
func IsDraftV3(data []byte) bool {
	var d struct {
		ZarrFormat json.RawMessage `json:"zarr_format"`
		Encoding   json.RawMessage `json:"metadata_encoding"`
	}
	if json.Unmarshal(data, &d) != nil {
		return false
	}
	f := bytes.TrimSpace(d.ZarrFormat)
	return d.Encoding != nil || (len(f) > 0 && f[0] == '"')
}

// ParseZarrJSON parses a v3 zarr.json document: an array node (a set) or a
// group node (g set); name is the file's store path.
func ParseZarrJSON(name string, data []byte) (a *Array, g *Group, err error) {
	var d zarrJSONDoc
	if err := decodeObject(name, data, &d); err != nil {
		return nil, nil, err
	}
	if err := checkFormat(name, d.ZarrFormat, 3); err != nil {
		return nil, nil, err
	}
	if d.Attributes != nil && !isNull(d.Attributes) {
		var obj map[string]json.RawMessage
		if json.Unmarshal(d.Attributes, &obj) != nil {
			return nil, nil, metaErr(name, "attributes is not an object")
		}
	}
	switch {
	case d.NodeType == nil:
		return nil, nil, metaErr(name, "no node_type")
	case *d.NodeType == "group":
		return nil, &Group{Path: dirOf(name), Version: 3, Attrs: d.Attributes}, nil
	case *d.NodeType != "array":
		return nil, nil, metaErr(name, "node_type %q is neither array nor group", *d.NodeType)
	}
	if a, err = arrayV3(name, &d); err != nil {
		return nil, nil, err
	}
	return a, nil, nil
}

func arrayV3(name string, d *zarrJSONDoc) (*Array, error) {
	if d.ChunkGrid == nil {
		return nil, metaErr(name, "no chunk_grid")
	}
	if d.ChunkGrid.Name != "regular" {
		return nil, metaErr(name, "chunk_grid %q is not supported (only regular)", d.ChunkGrid.Name)
	}
	var grid struct {
		ChunkShape []int64 `json:"chunk_shape"`
	}
	if err := decodeObject(name+" chunk_grid configuration", d.ChunkGrid.Config, &grid); err != nil {
		return nil, err
	}
	if err := checkGrid(name, d.Shape, grid.ChunkShape, "chunk_shape"); err != nil {
		return nil, err
	}
	a := &Array{Path: dirOf(name), Version: 3, Shape: d.Shape, ChunkShape: grid.ChunkShape,
		DType: d.DataType, FillValue: d.FillValue, Order: 'C', Attrs: d.Attributes}
	if isNull(d.DataType) {
		return nil, metaErr(name, "no data_type")
	}
	if d.FillValue == nil {
		return nil, metaErr(name, "no fill_value")
	}
	if len(d.StorageTransfrm) > 0 {
		return nil, metaErr(name, "storage_transformers are not supported")
	}
	keys, err := keyEncodingV3(name, d.ChunkKey)
	if err != nil {
		return nil, err
	}
	a.Keys = keys
	if d.DimensionNames != nil && !isNull(d.DimensionNames) {
		if a.DimNames, err = parseNames(d.DimensionNames); err != nil {
			return nil, metaErr(name, "dimension_names: %v", err)
		}
		if len(a.DimNames) != len(a.Shape) {
			return nil, metaErr(name, "dimension_names has %d names, the array has rank %d", len(a.DimNames), len(a.Shape))
		}
	}
	if len(d.Codecs) == 0 {
		return nil, metaErr(name, "no codecs")
	}
	for i, raw := range d.Codecs {
		c, err := v3Codec(name, i, raw)
		if err != nil {
			return nil, err
		}
		a.Codecs = append(a.Codecs, c)
	}
	return a, a.setSharding(name)
}

func keyEncodingV3(name string, k *namedConfig) (KeyEncoding, error) {
	if k == nil {
		return KeyEncoding{}, metaErr(name, "no chunk_key_encoding")
	}
	e := KeyEncoding{Default: k.Name == "default", Separator: '/'}
	switch k.Name {
	case "default":
	case "v2":
		e.Separator = '.'
	default:
		return KeyEncoding{}, metaErr(name, "chunk_key_encoding %q is not supported", k.Name)
	}
	if isNull(k.Config) {
		return e, nil
	}
	var c struct {
		Separator *string `json:"separator"`
	}
	if err := decodeObject(name+" chunk_key_encoding configuration", k.Config, &c); err != nil {
		return KeyEncoding{}, err
	}
	if c.Separator != nil {
		if *c.Separator != "." && *c.Separator != "/" {
			return KeyEncoding{}, metaErr(name, "chunk_key_encoding separator %q is neither . nor /", *c.Separator)
		}
		e.Separator = (*c.Separator)[0]
	}
	return e, nil
}

// v3Codec reads one entry of a codecs list: {"name", "configuration"} or,
// as some writers spell a codec without configuration, a bare name.
func v3Codec(name string, i int, raw json.RawMessage) (Codec, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil && s != "" {
		return Codec{Name: s}, nil
	}
	var c namedConfig
	if err := decodeObject(fmt.Sprintf("%s codecs[%d]", name, i), raw, &c); err != nil {
		return Codec{}, err
	}
	if c.Name == "" {
		return Codec{}, metaErr(name, "codecs[%d] has no name", i)
	}
	if isNull(c.Config) {
		c.Config = nil
	}
	return Codec(c), nil
}

// Sharding is a v3 sharding_indexed codec that chunkvc reads into: each
// chunk file of the array (a shard) holds PerShard inner chunks of
// InnerShape and an index of their places.
type Sharding struct {
	InnerShape   []int64 // the inner chunk shape
	PerShard     []int64 // inner chunks per shard, per dimension
	IndexAtStart bool    // index_location "start" (default "end")
	BigEndian    bool    // the index's bytes codec endian
	Checksum     bool    // the index ends in a crc32c of it
	Codecs       []Codec // the inner chunks' codecs, raw
}

// Entries is the number of inner chunks (index entries) of one shard.
func (s *Sharding) Entries() int64 {
	n := int64(1)
	for _, p := range s.PerShard {
		n *= p
	}
	return n
}

// IndexSize is the byte length of a shard's encoded index.
func (s *Sharding) IndexSize() int64 {
	n := 16 * s.Entries()
	if s.Checksum {
		n += 4
	}
	return n
}

type shardingDoc struct {
	ChunkShape    []int64           `json:"chunk_shape"`
	Codecs        []json.RawMessage `json:"codecs"`
	IndexCodecs   []json.RawMessage `json:"index_codecs"`
	IndexLocation *string           `json:"index_location"`
}

// setSharding fills Sharding or ShardingNote when a uses sharding_indexed.
// A configuration that is malformed is an error; one chunkvc cannot see
// into (other codecs around it, an index it cannot size) is a note.
func (a *Array) setSharding(name string) error {
	at := -1
	for i, c := range a.Codecs {
		if c.Name == ShardingCodec {
			at = i
		}
	}
	if at < 0 {
		return nil
	}
	var d shardingDoc
	if err := decodeObject(name+" sharding_indexed configuration", a.Codecs[at].Config, &d); err != nil {
		return err
	}
	if err := checkGrid(name, a.ChunkShape, d.ChunkShape, "sharding chunk_shape"); err != nil {
		return err
	}
	s := &Sharding{InnerShape: d.ChunkShape, PerShard: make([]int64, len(d.ChunkShape))}
	n := int64(1)
	for i, c := range d.ChunkShape {
		if a.ChunkShape[i]%c != 0 {
			return metaErr(name, "sharding chunk_shape %v does not divide the shard shape %v", d.ChunkShape, a.ChunkShape)
		}
		s.PerShard[i] = a.ChunkShape[i] / c
		n *= s.PerShard[i]
	}
	if d.IndexLocation != nil && *d.IndexLocation != "end" && *d.IndexLocation != "start" {
		return metaErr(name, "sharding index_location %q is neither start nor end", *d.IndexLocation)
	}
	s.IndexAtStart = d.IndexLocation != nil && *d.IndexLocation == "start"
	for i, raw := range d.Codecs {
		c, err := v3Codec(name+" sharding", i, raw)
		if err != nil {
			return err
		}
		s.Codecs = append(s.Codecs, c)
	}
	switch {
	case len(a.Codecs) != 1:
		a.ShardingNote = "sharding_indexed is not the array's only codec"
	case n > MaxShardEntries:
		a.ShardingNote = fmt.Sprintf("a shard holds %d inner chunks, over %d", n, MaxShardEntries)
	default:
		if note := s.indexCodecs(name, d.IndexCodecs); note != "" {
			a.ShardingNote = note
			return nil
		}
		a.Sharding = s
	}
	return nil
}

// indexCodecs accepts the fixed-size index encodings the spec's examples
// use: bytes (little or big endian), optionally followed by crc32c.
func (s *Sharding) indexCodecs(name string, raw []json.RawMessage) string {
	var cs []Codec
	for i, r := range raw {
		c, err := v3Codec(name+" index_codecs", i, r)
		if err != nil {
			return "index_codecs: " + err.Error()
		}
		cs = append(cs, c)
	}
	if len(cs) == 0 || cs[0].Name != "bytes" || len(cs) > 2 || (len(cs) == 2 && cs[1].Name != "crc32c") {
		return "index_codecs other than bytes[, crc32c]"
	}
	if cs[0].Config != nil {
		var e struct {
			Endian *string `json:"endian"`
		}
		if json.Unmarshal(cs[0].Config, &e) != nil {
			return "index bytes codec configuration is not an object"
		}
		if e.Endian != nil && *e.Endian != "little" && *e.Endian != "big" {
			return fmt.Sprintf("index bytes codec endian %q", *e.Endian)
		}
		s.BigEndian = e.Endian != nil && *e.Endian == "big"
	}
	s.Checksum = len(cs) == 2
	return ""
}
