package flatgeobuf

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/formats/generic"
	"github.com/chunkvc/chunkvc/hashing"
)

// Version is the adapter version written in manifests.
const Version = 1

// Feature-block parameters (bytes of records, length prefixes included).
// They shape block boundaries, so they are part of Params and Version.
const (
	// BlockMin: no content-defined cut before a block holds this much.
	BlockMin = 128 << 10
	// BlockAvg: past BlockMin, a feature of n bytes ends its block with
	// probability n/BlockAvg (decided by its hash), so blocks average about
	// BlockMin+BlockAvg whatever the feature size.
	BlockAvg = 256 << 10
	// BlockMax: a feature that would push a block past this starts a new one.
	BlockMax = 1 << 20
	// SplitMin: a single record larger than this is cut by content
	// (generic.Split) into "<key>@" chunks.
	SplitMin = 8 << 20
)

// Params is the parameter string written in manifests.
var Params = fmt.Sprintf("blocks=blake3 min=%d avg=%d max=%d split=%d index %s",
	BlockMin, BlockAvg, BlockMax, SplitMin, generic.Params)

// Adapter reads FlatGeobuf v3 files.
type Adapter struct{}

var _ formats.Adapter = Adapter{}

// Name implements formats.Adapter.
func (Adapter) Name() string { return "flatgeobuf" }

// Detect accepts the "fgb" major-version-3 magic with any patch byte.
func (Adapter) Detect(head []byte) bool { return isMagic(head) }

// Layout implements formats.Adapter: magic and header inline, the packed
// R-tree as content-defined "index@" chunks, feature records grouped into
// content-defined blocks keyed by their first feature. Anything malformed
// is an error (the caller falls back to the generic adapter).
func (Adapter) Layout(ctx context.Context, r io.ReaderAt, size int64) (*formats.Layout, error) {
	return layout(ctx, r, size, defaultBlocking)
}

func layout(ctx context.Context, r io.ReaderAt, size int64, p blocking) (*formats.Layout, error) {
	f, err := parse(ctx, r, size)
	if err != nil {
		return nil, err
	}
	segs := []formats.Segment{{Off: 0, Len: f.indexOff}}
	index := "none"
	if f.indexLen > 0 {
		ok, err := f.derivedIndex(r)
		if err != nil {
			return nil, err
		}
		if ok {
			// Every leaf offset after an edited record shifts, so storing the
			// index would re-upload most of it on any local edit; it is
			// rebuilt from the features instead.
			index = fmt.Sprintf("node_size=%d derived", f.h.nodeSize)
			segs = append(segs, formats.Segment{Off: f.indexOff, Len: f.indexLen, Derive: RecipeIndex})
		} else {
			index = fmt.Sprintf("node_size=%d verbatim", f.h.nodeSize)
			idx, err := generic.Split(ctx, r, f.indexOff, f.indexLen, "index", nil)
			if err != nil {
				return nil, err
			}
			segs = append(segs, idx...)
		}
	}
	for _, b := range blocks(f.feats, p) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if b.split {
			parts, err := generic.Split(ctx, r, b.off, b.len, b.key, b.bbox)
			if err != nil {
				return nil, err
			}
			segs = append(segs, parts...)
			continue
		}
		segs = append(segs, formats.Segment{Off: b.off, Len: b.len, Key: b.key, BBox: b.bbox})
	}
	l := &formats.Layout{
		Format:   "flatgeobuf",
		Version:  Version,
		Params:   Params,
		Summary:  f.summary(index),
		Segments: formats.Coalesce(segs),
	}
	if f.index != nil {
		// Without the features, which the index no longer needs.
		g := &file{h: f.h, indexOff: f.indexOff, indexLen: f.indexLen, index: f.index}
		l.Derived = func(_ context.Context, seg formats.Segment) ([]byte, error) { return g.derive(seg) }
	}
	return l, nil
}

// RecipeIndex names the derived packed Hilbert R-tree.
const RecipeIndex = "fgb-rtree"

var _ formats.Deriver = Adapter{}

// Derive rebuilds the packed R-tree from the feature records in r. The
// index bytes of r are not read, so they may be anything.
func (Adapter) Derive(ctx context.Context, r io.ReaderAt, size int64, seg formats.Segment) ([]byte, error) {
	if seg.Derive != RecipeIndex {
		return nil, fmt.Errorf("flatgeobuf: unknown derived segment %q", seg.Derive)
	}
	f, err := parse(ctx, r, size)
	if err != nil {
		return nil, err
	}
	return f.derive(seg)
}

// derive is Derive of the parsed file f.
func (f *file) derive(seg formats.Segment) ([]byte, error) {
	if seg.Derive != RecipeIndex {
		return nil, fmt.Errorf("flatgeobuf: unknown derived segment %q", seg.Derive)
	}
	if f.indexOff != seg.Off || f.indexLen != seg.Len {
		return nil, fmt.Errorf("flatgeobuf: index is at %d+%d, segment says %d+%d", f.indexOff, f.indexLen, seg.Off, seg.Len)
	}
	if f.index != nil {
		return f.index, nil
	}
	return BuildIndex(f.feats, f.h.nodeSize)
}

// derivedIndex reports whether the stored index equals BuildIndex, and
// keeps the index built when it does.
func (f *file) derivedIndex(r io.ReaderAt) (bool, error) {
	want, err := BuildIndex(f.feats, f.h.nodeSize)
	if err != nil || int64(len(want)) != f.indexLen {
		return false, nil
	}
	got := make([]byte, f.indexLen)
	if err := readAt(r, got, f.indexOff); err != nil {
		return false, err
	}
	if !bytes.Equal(got, want) {
		return false, nil
	}
	f.index = want
	return true, nil
}

// blocking holds the feature-block parameters (tests vary them).
type blocking struct{ min, avg, max, split int64 }

var defaultBlocking = blocking{BlockMin, BlockAvg, BlockMax, SplitMin}

// block is a run of consecutive feature records.
type block struct {
	off, len int64
	key      string
	bbox     *formats.BBox
	split    bool // one record over the split size: CDC inside it
}

// cuts reports whether feature f ends a block by content: the top 64 bits
// of its hash fall below len/avg of the 64-bit range.
func (p blocking) cuts(f Feature) bool {
	if f.Len >= p.avg {
		return true
	}
	h := binary.BigEndian.Uint64(f.ID[24:])
	return h < uint64(f.Len)*(math.MaxUint64/uint64(p.avg))
}

// blocks groups feats (file order) into content-defined blocks. A block's
// key is "f/" + the short hash of its first feature, so it stays put when
// features elsewhere come and go, and even when the block's other features
// change. A repeated key for different content gets ".2", ".3", ….
func blocks(feats []Feature, p blocking) []block {
	var out []block
	seen := map[string][]hashing.ID{} // base key → block digests, in order
	emit := func(fs []Feature, split bool) {
		if len(fs) == 0 {
			return
		}
		d := hashing.New()
		bb := emptyBox
		for i := range fs {
			f := &fs[i] // a copy's ID[:] would escape: one allocation per feature
			d.Write(f.ID[:])
			if !f.Empty() {
				bb[0], bb[1] = minf(bb[0], f.BBox[0]), minf(bb[1], f.BBox[1])
				bb[2], bb[3] = maxf(bb[2], f.BBox[2]), maxf(bb[3], f.BBox[3])
			}
		}
		base := "f/" + fs[0].ID.Short()
		id, n := d.ID(), -1
		for i, x := range seen[base] {
			if x == id {
				n = i
				break
			}
		}
		if n < 0 {
			n = len(seen[base])
			seen[base] = append(seen[base], id)
		}
		key := base
		if n > 0 {
			key += "." + strconv.Itoa(n+1)
		}
		last := fs[len(fs)-1]
		b := block{off: fs[0].Off, len: last.Off + last.Len - fs[0].Off, key: key, split: split}
		if finite(bb) {
			b.bbox = &bb
		}
		out = append(out, b)
	}
	start, size := 0, int64(0)
	for i, f := range feats {
		if f.Len > p.split {
			emit(feats[start:i], false)
			emit(feats[i:i+1], true)
			start, size = i+1, 0
			continue
		}
		if size > 0 && size+f.Len > p.max {
			emit(feats[start:i], false)
			start, size = i, 0
		}
		size += f.Len
		if size >= p.min && p.cuts(f) {
			emit(feats[start:i+1], false)
			start, size = i+1, 0
		}
	}
	emit(feats[start:], false)
	return out
}

func finite(b formats.BBox) bool {
	for _, v := range b {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return false
		}
	}
	return b[0] <= b[2] && b[1] <= b[3]
}

var geomTypes = []string{"Unknown", "Point", "LineString", "Polygon", "MultiPoint", "MultiLineString",
	"MultiPolygon", "GeometryCollection", "CircularString", "CompoundCurve", "CurvePolygon",
	"MultiCurve", "MultiSurface", "Curve", "Surface", "PolyhedralSurface", "TIN", "Triangle"}

// summary describes the file in one-line, deterministic fields.
func (f *file) summary(index string) []formats.Field {
	var out []formats.Field
	add := func(k, v string) { out = append(out, formats.Field{Name: k, Value: v}) }
	h := f.h
	add("features", strconv.Itoa(len(f.feats)))
	gt := "type" + strconv.Itoa(int(h.geomType))
	if int(h.geomType) < len(geomTypes) {
		gt = geomTypes[h.geomType]
	}
	add("geometry_type", gt)
	if h.hasZ {
		add("has_z", "yes")
	}
	if h.hasM {
		add("has_m", "yes")
	}
	if h.crs != "" {
		add("crs", h.crs)
	}
	var env formats.BBox
	if len(h.envelope) == 4 { // other lengths (a z range?) are not standard: use the features
		copy(env[:], h.envelope)
	} else {
		env = emptyBox
		for _, ft := range f.feats {
			if !ft.Empty() {
				env[0], env[1] = minf(env[0], ft.BBox[0]), minf(env[1], ft.BBox[1])
				env[2], env[3] = maxf(env[2], ft.BBox[2]), maxf(env[3], ft.BBox[3])
			}
		}
	}
	if finite(env) {
		var s [4]string
		for i, v := range env {
			s[i] = strconv.FormatFloat(v, 'g', -1, 64)
		}
		add("bbox", strings.Join(s[:], ","))
	}
	cols := strconv.Itoa(len(h.columns))
	if len(h.columns) > 0 {
		names := make([]string, len(h.columns))
		for i, c := range h.columns {
			names[i] = strings.NewReplacer(",", "_", " ", "_").Replace(sanitize(c, 64))
		}
		cols += " " + truncate(strings.Join(names, ","), 300)
	}
	add("columns", cols)
	add("index", index)
	if n := sanitize(h.name, 120); n != "" {
		add("name", n)
	}
	return out
}

// sanitize makes b a single printable line of at most n bytes.
func sanitize(b []byte, n int) string {
	s := strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(string(b), "?"))
	return truncate(strings.Join(strings.Fields(s), " "), n)
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}
