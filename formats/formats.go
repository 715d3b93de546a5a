package formats

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/chunkvc/chunkvc/geom"
)

// Adapter names, as manifests and --json outputs spell them (the format
// field). Compare with these, never with literals.
const (
	TIFF       = "tiff"
	Parquet    = "parquet"
	FlatGeobuf = "flatgeobuf"
	Generic    = "generic"
)

// Sharder is implemented by adapters whose keys have a structure that a
// split manifest's shards should follow (a region of the tile grid, a row
// group). Shard names key's shard: one or more slash-separated words of
// lower-case letters, digits, '_', '-' and '.', depending on key alone,
// so that an edit rewrites the shards of the keys it changed and no other.
type Sharder interface {
	Shard(key string) string
}

// MediaType is the HTTP media type of files the adapter named name reads
// (application/octet-stream for generic and unknown ones).
func MediaType(name string) string {
	switch name {
	case TIFF:
		return "image/tiff"
	case Parquet:
		return "application/vnd.apache.parquet"
	case FlatGeobuf:
		return "application/flatgeobuf"
	}
	return "application/octet-stream"
}

// MaxChunk is the largest chunk an adapter may emit (DESIGN: split anything
// over ~8 MiB by CDC; this is the hard limit the pipeline trusts).
const MaxChunk = 16 << 20

// MaxKeyLen bounds a chunk key.
const MaxKeyLen = 120

// HeadSize is how many leading bytes Detect is given (fewer for short files).
const HeadSize = 64

// SummaryBBox spells b for a "bbox" summary field: each coordinate in the
// shortest decimal that round-trips ('g', so large values take exponents).
func SummaryBBox(b geom.BBox) string {
	var s [4]string
	for i, v := range b.Array() {
		s[i] = strconv.FormatFloat(v, 'g', -1, 64)
	}
	return strings.Join(s[:], ",")
}

// Segment is a byte range of the file.
type Segment struct {
	Off, Len int64
	// Key is empty for inline (skeleton) bytes, otherwise the chunk's key.
	Key string
	// BBox is the chunk's footprint in the file's own CRS, nil when
	// unknown.
	BBox *geom.BBox
	// Derive, when set (and Key empty), names a recipe by which the
	// adapter's Deriver regenerates these bytes from the rest of the file
	// (a FlatGeobuf spatial index from its features). Derived bytes are
	// stored nowhere; the pipeline checks the recipe reproduces them.
	Derive string
}

// IsChunk reports whether s is a chunk rather than inline bytes.
func (s Segment) IsChunk() bool { return s.Key != "" }

// IsDerived reports whether s is regenerated rather than stored.
func (s Segment) IsDerived() bool { return s.Key == "" && s.Derive != "" }

// Deriver is implemented by adapters that emit derived segments.
type Deriver interface {
	// Derive returns the bytes of segment seg (whose Derive names the
	// recipe) computed from r, a file of size bytes in which every byte
	// outside derived segments is final; bytes inside them are undefined.
	Derive(ctx context.Context, r io.ReaderAt, size int64, seg Segment) ([]byte, error)
}

// StreamDeriver is a Deriver that can also write a derived segment as it
// makes it, so that checking one costs no memory per byte of it.
type StreamDeriver interface {
	Deriver
	// DeriveTo writes what Derive returns to w, at offsets from the
	// segment's first byte, each byte once, in any order; it does not
	// close w.
	DeriveTo(ctx context.Context, r io.ReaderAt, size int64, seg Segment, w io.WriterAt) error
}

// Field is one line of a manifest summary.
type Field struct{ Name, Value string }

// Layout is what an adapter makes of a file.
type Layout struct {
	Format  string // adapter name: tiff, parquet, flatgeobuf, generic
	Version int    // adapter version; bump when keys or boundaries change
	Params  string // adapter parameters that shape chunk boundaries
	// Fallback says why a native adapter was not used (generic only).
	Fallback string
	// Summary is shown in the manifest header, in this order.
	Summary []Field
	// Segments cover [0, size) in file order, exactly once.
	Segments []Segment
	// Aliases are extra chunk keys for a byte range that a chunk segment
	// already covers (a TIFF tile whose offset and size equal another's).
	Aliases []Segment
}

// Adapter enumerates the layout of one file format.
type Adapter interface {
	// Name is the adapter name written in manifests.
	Name() string
	// Detect reports whether head, the first min(HeadSize, size) bytes,
	// looks like this format. It must not panic on any input.
	Detect(head []byte) bool
	// Layout reads r (size bytes) and returns its layout. An error means
	// "not understood"; the caller falls back to the generic adapter. It
	// must neither panic nor allocate more than O(size) on any input.
	Layout(ctx context.Context, r io.ReaderAt, size int64) (*Layout, error)
}

// ErrLayout is wrapped by Check for a layout that does not cover its file.
var ErrLayout = errors.New("invalid layout")

// Check verifies that l covers [0, size) exactly once with valid keys and
// chunk sizes. Nothing is trusted before it passes.
func Check(l *Layout, size int64) error {
	if l == nil {
		return fmt.Errorf("%w: nil", ErrLayout)
	}
	var pos int64
	ranges := make(map[[2]int64]bool)
	for i, s := range l.Segments {
		if s.Off != pos {
			if s.Off > pos {
				return fmt.Errorf("%w: gap at bytes %d..%d before segment %d", ErrLayout, pos, s.Off, i)
			}
			return fmt.Errorf("%w: segment %d at offset %d overlaps the previous one (ends at %d)", ErrLayout, i, s.Off, pos)
		}
		if s.Len <= 0 {
			return fmt.Errorf("%w: segment %d at offset %d has length %d", ErrLayout, i, s.Off, s.Len)
		}
		if s.Len > size-pos {
			return fmt.Errorf("%w: segment %d (bytes %d..+%d) runs past the end of the %d-byte file", ErrLayout, i, s.Off, s.Len, size)
		}
		if s.Derive != "" && (s.IsChunk() || len(s.Derive) > 64) {
			return fmt.Errorf("%w: segment %d: derived segment with a key or a recipe name over 64 bytes", ErrLayout, i)
		}
		if s.IsChunk() {
			if err := CheckKey(s.Key); err != nil {
				return fmt.Errorf("%w: segment %d: %v", ErrLayout, i, err)
			}
			if s.Len > MaxChunk {
				return fmt.Errorf("%w: chunk %s is %d bytes, over the %d-byte limit", ErrLayout, s.Key, s.Len, MaxChunk)
			}
			ranges[[2]int64{s.Off, s.Len}] = true
		}
		pos += s.Len
	}
	if pos != size {
		return fmt.Errorf("%w: segments end at %d, file has %d bytes", ErrLayout, pos, size)
	}
	for _, a := range l.Aliases {
		if err := CheckKey(a.Key); err != nil {
			return fmt.Errorf("%w: alias: %v", ErrLayout, err)
		}
		if !ranges[[2]int64{a.Off, a.Len}] {
			return fmt.Errorf("%w: alias %s (bytes %d..+%d) is not the range of a chunk", ErrLayout, a.Key, a.Off, a.Len)
		}
	}
	return nil
}

// CheckKey verifies a chunk key's spelling.
func CheckKey(k string) error {
	if k == "" || len(k) > MaxKeyLen {
		return fmt.Errorf("chunk key %q: length %d not in 1..%d", k, len(k), MaxKeyLen)
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("chunk key %q: byte %d is not printable ASCII", k, i)
		}
	}
	if strings.Contains(k[:len(k)-1], "@") {
		return fmt.Errorf("chunk key %q: '@' may only end a key", k)
	}
	return nil
}

// Chunks returns the chunk segments of l, in file order.
func (l *Layout) Chunks() []Segment {
	n := 0
	for _, s := range l.Segments {
		if s.IsChunk() {
			n++
		}
	}
	out := make([]Segment, 0, n)
	for _, s := range l.Segments {
		if s.IsChunk() {
			out = append(out, s)
		}
	}
	return out
}

// InlineBytes is the total length of l's inline (skeleton) segments.
func (l *Layout) InlineBytes() int64 {
	var n int64
	for _, s := range l.Segments {
		if !s.IsChunk() && !s.IsDerived() {
			n += s.Len
		}
	}
	return n
}

// Coalesce merges adjacent inline segments, which adapters may emit freely.
// It works in segs' own memory (a second slice of a million tiles' segments
// is 56 MB) and returns the merged prefix: segs' contents are lost.
func Coalesce(segs []Segment) []Segment {
	out := segs[:0] // written at or before the index read: never ahead of it
	inline := func(s Segment) bool { return !s.IsChunk() && s.Derive == "" }
	for _, s := range segs {
		if s.Len == 0 && inline(s) {
			continue
		}
		if n := len(out); n > 0 && inline(s) && inline(out[n-1]) && out[n-1].Off+out[n-1].Len == s.Off {
			out[n-1].Len += s.Len
			continue
		}
		out = append(out, s)
	}
	return out
}

// MergeRanges sorts [start, end) ranges and merges overlapping or touching
// ones, dropping empty ones.
func MergeRanges(in [][2]int64) [][2]int64 {
	rs := append([][2]int64(nil), in...)
	sort.Slice(rs, func(i, j int) bool { return rs[i][0] < rs[j][0] })
	var out [][2]int64
	for _, r := range rs {
		if r[1] <= r[0] {
			continue
		}
		if n := len(out); n > 0 && r[0] <= out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], r[1])
			continue
		}
		out = append(out, r)
	}
	return out
}
