package zarr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/hashing"
)

// Format is the adapter name of a Zarr dataset's manifest.
const Format = "zarr"

// MaxSummaryArrays bounds the "array" summary fields of a store (a manifest
// holds at most 1000 summary lines); "arrays" still counts them all.
const MaxSummaryArrays = 900

// maxToken is the longest spelling of a dtype, fill value, codec chain or
// dimension name list before it is replaced by its hash ("#" and 16 hex
// digits), which keeps every value under manifest's 4096-byte limit.
const maxToken = 160

// ErrSummary is wrapped by ParseSummaryArray's errors.
var ErrSummary = errors.New("invalid zarr array summary")

// ArraySummary is what an "array" summary field says of one array: enough
// for a diff to place chunk keys in the grid and to notice encoding drift.
// Its text fields are spellings (see doc.go), compared, never decoded.
type ArraySummary struct {
	Prefix     string  // KeyPrefix of the array's path ("" for a root array)
	DType      string  // the dtype spelling
	Shape      []int64 // the array's shape
	ChunkShape []int64 // the chunk (shard, when sharded) shape
	// Dims spells the dimension names joined by ',' (each escaped), or
	// their hash when long; "" when the array names none (DimNames reads
	// it).
	Dims   string
	Order  byte   // 'C' or 'F'
	Codecs string // the codec chain spelling
	Fill   string // the fill value, compact JSON (or its hash)
	// Inner is the inner chunk shape of a sharded array whose shards
	// chunkvc sees into (keys then follow the inner grid); nil otherwise.
	Inner []int64
}

// Summary returns a store's manifest summary fields: "zarr" (the root's
// version), "arrays" (how many arrays were understood) and one "array"
// field per array in path order (at most MaxSummaryArrays), each
// SummarizeArray(a).String().
func Summary(st *Store) []formats.Field {
	out := []formats.Field{{Name: "zarr", Value: strconv.Itoa(st.Version)}}
	var arrays []formats.Field
	n := 0
	for _, nd := range st.Nodes {
		if nd.Array == nil {
			continue
		}
		n++
		if len(arrays) < MaxSummaryArrays {
			arrays = append(arrays, formats.Field{Name: "array", Value: SummarizeArray(nd.Array).String()})
		}
	}
	out = append(out, formats.Field{Name: "arrays", Value: strconv.Itoa(n)})
	return append(out, arrays...)
}

// SummarizeArray spells what a summary says of a.
func SummarizeArray(a *Array) ArraySummary {
	s := ArraySummary{Prefix: KeyPrefix(a.Path), Shape: a.Shape, ChunkShape: a.ChunkShape,
		Dims: dimsSpelling(a.DimNames), Order: a.Order, DType: dtypeSpelling(a.DType),
		Fill: capToken(escape(compactJSON(a.FillValue), false)), Codecs: capToken(codecChain(a))}
	if a.Sharding != nil {
		s.Inner = a.Sharding.InnerShape
	}
	return s
}

// String is the "array" field value: the grammar of doc.go.
func (s ArraySummary) String() string {
	var b strings.Builder
	if s.Prefix == "" {
		b.WriteByte('/')
	} else {
		b.WriteString(s.Prefix)
	}
	b.WriteString(" dtype=" + s.DType)
	b.WriteString(" shape=" + shapeSpelling(s.Shape))
	b.WriteString(" chunks=" + shapeSpelling(s.ChunkShape))
	if s.Inner != nil {
		b.WriteString(" inner=" + shapeSpelling(s.Inner))
	}
	if s.Dims != "" {
		b.WriteString(" dims=" + s.Dims)
	}
	b.WriteString(" order=" + string(s.Order))
	b.WriteString(" codecs=" + s.Codecs)
	b.WriteString(" fill=" + s.Fill)
	return b.String()
}

// KeyChunkShape is the shape of the chunks the array's keys name: the
// inner chunk shape when sharded, else the chunk shape.
func (s ArraySummary) KeyChunkShape() []int64 {
	if s.Inner != nil {
		return s.Inner
	}
	return s.ChunkShape
}

// KeyGrid is the grid the array's chunk keys index (Array.KeyGrid): a
// sharded array's shards times the inner chunks per shard, which may pass
// the shape's edge.
func (s ArraySummary) KeyGrid() []int64 {
	g := make([]int64, len(s.Shape))
	for i, n := range s.Shape {
		g[i] = ceilDiv(n, s.ChunkShape[i])
		if s.Inner != nil {
			g[i] *= s.ChunkShape[i] / s.Inner[i]
		}
	}
	return g
}

// GridChunks is the number of cells of KeyGrid that hold elements of the
// array (a sharded array's inner chunks wholly past the shape's edge are
// never stored and not counted), math.MaxInt64 when that does not fit.
func (s ArraySummary) GridChunks() int64 {
	n := int64(1)
	kc := s.KeyChunkShape()
	for i, sh := range s.Shape {
		g := ceilDiv(sh, kc[i])
		if g != 0 && n > math.MaxInt64/g {
			return math.MaxInt64
		}
		n *= g
	}
	return n
}

// ParseSummaryArray reads an "array" field value back. It accepts only
// what String writes (String(ParseSummaryArray(v)) == v) for a grid that
// passes the metadata parsers' bounds.
func ParseSummaryArray(v string) (ArraySummary, error) {
	var s ArraySummary
	bad := func(format string, args ...any) (ArraySummary, error) {
		return ArraySummary{}, fmt.Errorf("%w: %q: %s", ErrSummary, v, fmt.Sprintf(format, args...))
	}
	words := strings.Split(v, " ")
	if len(words) < 7 {
		return bad("want a prefix and dtype, shape, chunks, order, codecs, fill")
	}
	if words[0] != "/" {
		s.Prefix = words[0]
		if s.Prefix == "" || KeyPrefix(s.Prefix) != s.Prefix && !isHashPrefix(s.Prefix) {
			return bad("array prefix %q", s.Prefix)
		}
	}
	fields := map[string]string{}
	var names []string
	for _, w := range words[1:] {
		k, val, ok := strings.Cut(w, "=")
		if !ok || fields[k] != "" || slices.Contains(names, k) {
			return bad("word %q", w)
		}
		fields[k] = val
		names = append(names, k)
	}
	var err error
	if s.Shape, err = parseShape(fields["shape"]); err != nil {
		return bad("shape: %v", err)
	}
	if s.ChunkShape, err = parseShape(fields["chunks"]); err != nil {
		return bad("chunks: %v", err)
	}
	if err := checkGrid("summary", s.Shape, s.ChunkShape, "chunks"); err != nil {
		return bad("%v", err)
	}
	if in, ok := fields["inner"]; ok {
		if s.Inner, err = parseShape(in); err != nil {
			return bad("inner: %v", err)
		}
		if err := checkGrid("summary", s.ChunkShape, s.Inner, "inner"); err != nil {
			return bad("%v", err)
		}
		for i, c := range s.Inner {
			if s.ChunkShape[i]%c != 0 {
				return bad("inner %v does not divide chunks %v", s.Inner, s.ChunkShape)
			}
		}
	}
	if d, ok := fields["dims"]; ok {
		s.Dims = d
		if _, err := parseDims(d, len(s.Shape)); err != nil {
			return bad("dims: %v", err)
		}
	}
	if o := fields["order"]; o == "C" || o == "F" {
		s.Order = o[0]
	}
	s.DType, s.Codecs, s.Fill = fields["dtype"], fields["codecs"], fields["fill"]
	if s.DType == "" || s.Codecs == "" || s.Fill == "" {
		return bad("empty dtype, codecs or fill")
	}
	if got := s.String(); got != v {
		return bad("not canonical (want %q)", got)
	}
	return s, nil
}

func isHashPrefix(p string) bool { return len(p) == 17 && p[0] == '~' && isHex(p[1:]) }

func isTokenHash(p string) bool { return len(p) == 17 && p[0] == '#' && isHex(p[1:]) }

func isHex(p string) bool {
	for i := 0; i < len(p); i++ {
		if !strings.ContainsRune("0123456789abcdef", rune(p[i])) {
			return false
		}
	}
	return true
}

// shapeSpelling joins a shape with 'x' ("365x721x1440"); rank 0 is "()".
func shapeSpelling(sh []int64) string {
	if len(sh) == 0 {
		return "()"
	}
	parts := make([]string, len(sh))
	for i, n := range sh {
		parts[i] = strconv.FormatInt(n, 10)
	}
	return strings.Join(parts, "x")
}

func parseShape(v string) ([]int64, error) {
	if v == "()" {
		return []int64{}, nil
	}
	if v == "" {
		return nil, errors.New("missing")
	}
	parts := strings.Split(v, "x")
	if len(parts) > MaxRank {
		return nil, fmt.Errorf("rank over %d", MaxRank)
	}
	out := make([]int64, len(parts))
	for i, p := range parts {
		n, ok := parseCoord(p)
		if !ok {
			return nil, fmt.Errorf("%q is not a decimal", p)
		}
		out[i] = n
	}
	return out, nil
}

// DimNames returns the dimension names (a null name is ""), nil when the
// array names none or the names were too long to spell and are hashed.
func (s ArraySummary) DimNames() []string {
	names, err := parseDims(s.Dims, len(s.Shape))
	if err != nil || s.Dims == "" {
		return nil
	}
	return names
}

// dimsSpelling joins the escaped names with ',' (a null name is empty);
// "" when no dimension has a name.
func dimsSpelling(names []string) string {
	if !slices.ContainsFunc(names, func(n string) bool { return n != "" }) {
		return ""
	}
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = escape(n, true)
	}
	return capToken(strings.Join(parts, ","))
}

// parseDims reads a dims spelling for an array of the given rank; a hash
// is accepted (and read as no names).
func parseDims(v string, rank int) ([]string, error) {
	if isTokenHash(v) {
		return nil, nil
	}
	if v == "" || rank == 0 {
		return nil, errors.New("empty, or names for a rank-0 array")
	}
	parts := strings.Split(v, ",")
	if len(parts) != rank {
		return nil, fmt.Errorf("%d names for rank %d", len(parts), rank)
	}
	for i, p := range parts {
		n, err := unescape(p)
		if err != nil {
			return nil, err
		}
		parts[i] = n
	}
	if dimsSpelling(parts) != v {
		return nil, errors.New("not canonical")
	}
	return parts, nil
}

// escape spells s with no space, control byte, invalid UTF-8, '%' or '#'
// (and, in a list, ','), each written %XX.
func escape(s string, inList bool) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		c := s[i]
		if (r == utf8.RuneError && n == 1) || c <= ' ' || c == 0x7f || c == '%' || c == '#' || (inList && c == ',') {
			fmt.Fprintf(&b, "%%%02X", c)
			i++
			continue
		}
		b.WriteString(s[i : i+n])
		i += n
	}
	return b.String()
}

func unescape(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("short escape in %q", s)
		}
		c, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			return "", fmt.Errorf("escape in %q", s)
		}
		b.WriteByte(byte(c))
		i += 2
	}
	return b.String(), nil
}

// capToken replaces a spelling longer than maxToken by "#" and 16 hex
// digits of its BLAKE3 hash: still different when it changes.
func capToken(s string) string {
	if len(s) <= maxToken {
		return s
	}
	return "#" + hashing.Sum([]byte(s)).String()[:16]
}

// compactJSON is raw without insignificant space (raw itself if invalid).
func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(bytes.TrimSpace(raw))
	}
	return b.String()
}

// dtypeSpelling is a dtype's compact JSON, unquoted when it is a plain
// name ("<f4", "float32") that no other JSON value spells.
func dtypeSpelling(raw json.RawMessage) string {
	var name string
	c := compactJSON(raw)
	if json.Unmarshal(raw, &name) == nil && plainName(name) {
		return name
	}
	return capToken(escape(c, false))
}

func plainName(s string) bool {
	if s == "" || s == "true" || s == "false" || s == "null" || len(s) > maxToken {
		return false
	}
	if c := s[0]; c >= '0' && c <= '9' || c == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("<>|=_.:-", c) >= 0) {
			return false
		}
	}
	return true
}

// codecChain spells the codecs that turn an array's chunk into bytes, in
// order, joined by '+': v2 filters then compressor, v3 codecs; "none"
// when there are none. A sharded array's chain is
// "sharding[<inner chain>]".
func codecChain(a *Array) string {
	var parts []string
	for _, c := range a.Filters {
		parts = append(parts, codecName(c))
	}
	if a.Compressor != nil {
		parts = append(parts, codecName(*a.Compressor))
	}
	for _, c := range a.Codecs {
		parts = append(parts, codecName(c))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "+")
}

// codecName is a codec's name with what most changes its bytes: blosc's
// compressor and shuffle, bytes' endian, transpose's order, sharding's
// inner chain.
func codecName(c Codec) string {
	var cfg struct {
		CName   string            `json:"cname"`
		Shuffle json.RawMessage   `json:"shuffle"`
		Endian  string            `json:"endian"`
		Order   json.RawMessage   `json:"order"`
		Codecs  []json.RawMessage `json:"codecs"`
	}
	_ = json.Unmarshal(c.Config, &cfg) // names alone when it is not an object
	name := escape(c.Name, false)
	name = strings.NewReplacer("+", "%2B", "/", "%2F", "[", "%5B", "]", "%5D").Replace(name)
	switch c.Name {
	case "blosc":
		if cfg.CName != "" {
			name += "/" + escape(cfg.CName, false)
		}
		switch s := strings.Trim(string(cfg.Shuffle), `"`); s {
		case "0", "noshuffle":
			name += "/noshuffle"
		case "1", "shuffle":
			name += "/shuffle"
		case "2", "bitshuffle":
			name += "/bitshuffle"
		case "-1":
			name += "/autoshuffle"
		}
	case "bytes":
		switch cfg.Endian {
		case "little":
			name += "/le"
		case "big":
			name += "/be"
		}
	case "transpose":
		if len(cfg.Order) > 0 {
			name += "/" + strings.NewReplacer("[", "", "]", "", ",", ".").Replace(escape(compactJSON(cfg.Order), false))
		}
	case ShardingCodec:
		var inner []string
		for i, raw := range cfg.Codecs {
			if ic, err := v3Codec("", i, raw); err == nil {
				inner = append(inner, codecName(ic))
			}
		}
		name = "sharding[" + strings.Join(inner, "+") + "]"
	}
	return name
}
