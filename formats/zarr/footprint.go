package zarr

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"sort"
	"strings"

	"github.com/chunkvc/chunkvc/formats/zarr/codec"
	"github.com/chunkvc/chunkvc/formats/zarr/georef"
	"github.com/chunkvc/chunkvc/geom"
)

// maxCoordLen bounds the 1-D coordinate arrays Footprints decodes (8 bytes
// a value once decoded): a longer one leaves its arrays without
// footprints rather than the commit's memory growing with it.
const maxCoordLen = 1 << 24

// Footprints is where on the map the chunks of a store's arrays lie, from
// the store's own georeferencing (package georef: GDAL's and CF's 1-D
// coordinate arrays, an affine transform attribute).
type Footprints struct {
	grids map[string]*georef.Grid // by the array's KeyPrefix
	// CRS names the located arrays' CRS when they agree ("" when none is
	// located, none names one, or they differ).
	CRS string
	// Notes say, one per array of two or more dimensions whose
	// georeferencing is there but cannot be used, why ("t2m: coordinate
	// array lat: codec zfpy is not supported").
	Notes []string
	// Plain lists the arrays of two or more dimensions that nothing in
	// the store georeferences, and why ("temp: no dimension names").
	Plain []string
}

// Locate finds the footprints of the arrays of st, a store Walk read from
// fsys. It never fails: an array it cannot locate gets a line in Plain
// (no georeferencing) or Notes (a codec package codec does not decode,
// an unreadable or non-monotonic coordinate array) instead, and its
// chunks no footprint.
func Locate(fsys fs.FS, st *Store) *Footprints {
	f := &Footprints{grids: map[string]*georef.Grid{}}
	if st == nil || st.Unsupported != "" {
		return f
	}
	src := newCoordSource(fsys, st)
	crs, mixed := "", false
	for _, n := range st.Nodes {
		a := n.Array
		if a == nil || a.Rank() < 2 {
			continue
		}
		ga, err := geoArray(a)
		if err == nil {
			var g *georef.Grid
			if g, err = georef.Locate(ga, src.at(path.Dir("/"+a.Path))); err == nil {
				f.grids[KeyPrefix(a.Path)] = g
				mixed = mixed || (crs != "" && g.CRS != crs)
				crs = g.CRS
				continue
			}
		}
		var nl *georef.NotLocated
		if errors.As(err, &nl) && nl.Absent {
			f.Plain = append(f.Plain, arrayName(a.Path)+": "+err.Error())
			continue
		}
		f.Notes = append(f.Notes, arrayName(a.Path)+": "+err.Error())
	}
	if !mixed {
		f.CRS = crs
	}
	return f
}

// Box is the footprint of the chunk (or piece of a chunk, "<key>@…")
// keyed key; ok is false when its array has no footprints or key is not
// a chunk key.
func (f *Footprints) Box(key string) (geom.BBox, bool) {
	if len(f.grids) == 0 {
		return geom.BBox{}, false
	}
	if i := strings.IndexByte(key, '@'); i >= 0 {
		key = key[:i]
	}
	prefix, coords, ok := ParseKey(key)
	if !ok {
		return geom.BBox{}, false
	}
	g := f.grids[prefix]
	if g == nil || len(coords) != g.Dims {
		return geom.BBox{}, false
	}
	// Only the X and Y coordinates matter; Grid.Box wants all of them.
	idx := make([]int, len(coords))
	for i, c := range coords {
		if c > math.MaxInt32 {
			return geom.BBox{}, false
		}
		idx[i] = int(c)
	}
	return g.Box(idx)
}

// Located lists the arrays that have footprints, by key prefix, sorted.
func (f *Footprints) Located() []string {
	out := make([]string, 0, len(f.grids))
	for p := range f.grids {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func arrayName(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

// geoArray is what georef needs of a: its grid as chunkvc keys it (inner
// chunks of a sharded array), dimension names and attributes.
func geoArray(a *Array) (georef.Array, error) {
	ga := georef.Array{DimNames: a.DimNames}
	chunk := a.ChunkShape
	if a.Sharding != nil {
		chunk = a.Sharding.InnerShape
	}
	for i, n := range a.Shape {
		if n > math.MaxInt32 || chunk[i] > math.MaxInt32 {
			return ga, fmt.Errorf("dimension %d of %d is too long to locate", i, n)
		}
		ga.Shape = append(ga.Shape, int(n))
		ga.ChunkShape = append(ga.ChunkShape, int(chunk[i]))
	}
	attrs, err := attrMap(a.Attrs)
	if err != nil {
		return ga, err
	}
	ga.Attrs = attrs
	return ga, nil
}

func attrMap(raw json.RawMessage) (map[string]json.RawMessage, error) {
	attrs := map[string]json.RawMessage{}
	if len(raw) == 0 || string(raw) == "null" {
		return attrs, nil
	}
	if err := json.Unmarshal(raw, &attrs); err != nil {
		return nil, fmt.Errorf("attributes: %w", err)
	}
	return attrs, nil
}

// coordSource is a georef.Source over the arrays of one group of a
// store: names are resolved next to the data array.
type coordSource struct {
	fsys  fs.FS
	nodes map[string]*Node
	group string // "" for the root
}

func newCoordSource(fsys fs.FS, st *Store) coordSource {
	src := coordSource{fsys: fsys, nodes: make(map[string]*Node, len(st.Nodes))}
	for _, n := range st.Nodes {
		src.nodes[n.Path] = n
	}
	return src
}

func (s coordSource) at(dir string) coordSource {
	s.group = strings.Trim(dir, "/")
	return s
}

func (s coordSource) array(name string) *Array {
	if n := s.nodes[path.Join(s.group, name)]; n != nil {
		return n.Array
	}
	return nil
}

func (s coordSource) Attrs(name string) (map[string]json.RawMessage, bool, error) {
	a := s.array(name)
	if a == nil {
		return nil, false, nil
	}
	attrs, err := attrMap(a.Attrs)
	return attrs, err == nil, err
}

// Coord decodes the 1-D array name whole; a missing chunk is its fill
// value, as Zarr readers take it.
func (s coordSource) Coord(name string) ([]float64, bool, error) {
	a := s.array(name)
	if a == nil {
		return nil, false, nil
	}
	if a.Rank() != 1 {
		return nil, false, fmt.Errorf("%s is %d-D, not a coordinate array", name, a.Rank())
	}
	if a.Shape[0] > maxCoordLen {
		return nil, false, fmt.Errorf("%s: %d values, more than %d", name, a.Shape[0], maxCoordLen)
	}
	if a.Sharding != nil || a.ShardingNote != "" {
		return nil, false, fmt.Errorf("%s: sharded coordinate arrays are not decoded", name)
	}
	p, err := a.pipeline()
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", name, err)
	}
	n := int(a.Shape[0])
	out := make([]float64, 0, n)
	for c := int64(0); len(out) < n; c++ {
		file, err := a.ChunkFile([]int64{c})
		if err != nil {
			return nil, false, err
		}
		stored, err := fs.ReadFile(s.fsys, file)
		if errors.Is(err, fs.ErrNotExist) {
			fill, err := fillValue(a.FillValue)
			if err != nil {
				return nil, false, fmt.Errorf("%s: fill value: %w", name, err)
			}
			for range a.ChunkShape[0] {
				out = append(out, fill)
			}
			continue
		}
		if err != nil {
			return nil, false, err
		}
		raw, err := p.Decode(stored)
		if err != nil {
			return nil, false, fmt.Errorf("%s: %w", file, err)
		}
		v, err := raw.Float64()
		if err != nil {
			return nil, false, fmt.Errorf("%s: %w", file, err)
		}
		out = append(out, v...)
	}
	return out[:n], true, nil
}

// fillValue reads a JSON fill value as a number: null and "NaN" are NaN,
// as are the other strings v3 allows for floats.
func fillValue(raw json.RawMessage) (float64, error) {
	var v any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &v); err != nil {
			return 0, err
		}
	}
	switch x := v.(type) {
	case float64:
		return x, nil
	case string:
		switch x {
		case "Infinity":
			return math.Inf(1), nil
		case "-Infinity":
			return math.Inf(-1), nil
		}
		return math.NaN(), nil
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	}
	return math.NaN(), nil
}

// pipeline is the decoder of a's chunk (shard) files (package codec).
func (a *Array) pipeline() (*codec.Pipeline, error) {
	return a.pipelineOf(a.ChunkShape, a.Codecs)
}

// pipelineOf is the decoder of chunks of shape chunk: v2's compressor and
// filters, or the v3 codecs given.
func (a *Array) pipelineOf(chunk []int64, v3codecs []Codec) (*codec.Pipeline, error) {
	shape := make([]int, len(chunk))
	for i, n := range chunk {
		if n > math.MaxInt32 {
			return nil, fmt.Errorf("chunk side %d is too long", n)
		}
		shape[i] = int(n)
	}
	if a.Version == 2 {
		comp := json.RawMessage("null")
		if a.Compressor != nil {
			comp = a.Compressor.Config
		}
		filters := make([]json.RawMessage, len(a.Filters))
		for i, f := range a.Filters {
			filters[i] = f.Config
		}
		fl, err := json.Marshal(filters)
		if err != nil {
			return nil, err
		}
		return codec.NewV2(comp, fl, a.DType, string(a.Order), shape)
	}
	type v3codec struct {
		Name   string          `json:"name"`
		Config json.RawMessage `json:"configuration,omitempty"`
	}
	list := make([]v3codec, len(v3codecs))
	for i, c := range v3codecs {
		list[i] = v3codec(c)
	}
	codecs, err := json.Marshal(list)
	if err != nil {
		return nil, err
	}
	return codec.NewV3(codecs, a.DType, shape)
}
