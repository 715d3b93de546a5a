package flatgeobuf

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/formats/generic"
	"github.com/chunkvc/chunkvc/geom"
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
func (Adapter) Name() string { return formats.FlatGeobuf }

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
	f, err := parseHead(r, size)
	if err != nil {
		return nil, err
	}
	k := &blocker{p: p, seen: map[string][]hashing.ID{}}
	var chk *indexCheck
	if f.indexLen > 0 {
		chk = newIndexCheck(f, r)
	}
	err = f.walk(ctx, r, size, true, func(ft *Feature) error {
		k.add(ft)
		return chk.leaf(ft)
	})
	if err != nil {
		return nil, err
	}
	k.close(false)
	segs := []formats.Segment{{Off: 0, Len: f.indexOff}}
	index := "none"
	if f.indexLen > 0 {
		ok, err := chk.finish()
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
	for _, b := range k.out {
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
	return &formats.Layout{
		Format:   formats.FlatGeobuf,
		Version:  Version,
		Params:   Params,
		Summary:  f.summary(index),
		Segments: formats.Coalesce(segs),
	}, nil
}

// RecipeIndex names the derived packed Hilbert R-tree.
const RecipeIndex = "fgb-rtree"

var _ formats.StreamDeriver = Adapter{}

// Derive rebuilds the packed R-tree from the feature records in r. The
// index bytes of r are not read, so they may be anything.
func (Adapter) Derive(ctx context.Context, r io.ReaderAt, size int64, seg formats.Segment) ([]byte, error) {
	f, err := deriveHead(r, size, seg)
	if err != nil {
		return nil, err
	}
	out := make([]byte, f.indexLen) // bounded by the file: parseHead checked
	if err := f.writeIndex(ctx, r, size, sliceWriter(out)); err != nil {
		return nil, err
	}
	return out, nil
}

// DeriveTo is Derive writing the index to w (offsets from its first
// byte) as it is built: memory does not grow with the feature count.
func (Adapter) DeriveTo(ctx context.Context, r io.ReaderAt, size int64, seg formats.Segment, w io.WriterAt) error {
	f, err := deriveHead(r, size, seg)
	if err != nil {
		return err
	}
	return f.writeIndex(ctx, r, size, w)
}

func deriveHead(r io.ReaderAt, size int64, seg formats.Segment) (*file, error) {
	if seg.Derive != RecipeIndex {
		return nil, fmt.Errorf("flatgeobuf: unknown derived segment %q", seg.Derive)
	}
	f, err := parseHead(r, size)
	if err != nil {
		return nil, err
	}
	if f.indexOff != seg.Off || f.indexLen != seg.Len {
		return nil, fmt.Errorf("flatgeobuf: index is at %d+%d, segment says %d+%d", f.indexOff, f.indexLen, seg.Off, seg.Len)
	}
	return f, nil
}

// writeIndex walks the records and writes the tree over them to w.
func (f *file) writeIndex(ctx context.Context, r io.ReaderAt, size int64, w io.WriterAt) error {
	return writeTree(f.h.count, f.h.nodeSize, w, func(leaf func(geom.BBox, int64) error) error {
		return f.walk(ctx, r, size, false, func(ft *Feature) error { return leaf(ft.BBox, ft.Len) })
	})
}

// writeTree writes to w (offsets from the index's first byte) the tree
// over the count records leaves feeds it in file order (their bboxes and
// lengths), each level's nodes gathered into runs of up to runBytes.
func writeTree(count uint64, nodeSize uint16, w io.WriterAt, leaves func(leaf func(geom.BBox, int64) error) error) error {
	const runBytes = 64 << 10
	var runs [][]byte  // per level: nodes not yet written
	var first []uint64 // per level: index of the run's first node
	put := func(l int, n uint64, node *[nodeItemSize]byte) error {
		if len(runs[l]) >= runBytes {
			if _, err := w.WriteAt(runs[l], int64(first[l])*nodeItemSize); err != nil {
				return err
			}
			runs[l] = runs[l][:0]
		}
		if len(runs[l]) == 0 {
			first[l] = n
		}
		runs[l] = append(runs[l], node[:]...)
		return nil
	}
	t, err := newTree(count, nodeSize, put)
	if err != nil {
		return err
	}
	runs, first = make([][]byte, len(t.lv)), make([]uint64, len(t.lv))
	err = leaves(t.leaf)
	if err == nil {
		err = t.finish()
	}
	if err != nil {
		return err
	}
	for l, run := range runs {
		if _, err := w.WriteAt(run, int64(first[l])*nodeItemSize); err != nil {
			return err
		}
	}
	return nil
}

// sliceWriter writes into a byte slice.
type sliceWriter []byte

func (s sliceWriter) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 || off > int64(len(s)) || int64(len(p)) > int64(len(s))-off {
		return 0, fmt.Errorf("flatgeobuf: index write of %d bytes at %d is out of range", len(p), off)
	}
	return copy(s[off:], p), nil
}

// indexCheck compares the stored index, node by node, with the tree over
// the records as they are walked. A nil *indexCheck checks nothing.
type indexCheck struct {
	t      *tree
	levels []*windowReader // per level, over that level's stored nodes
	base   int64           // the index's offset in the file
	ok     bool
}

func newIndexCheck(f *file, r io.ReaderAt) *indexCheck {
	c := &indexCheck{base: f.indexOff}
	t, err := newTree(f.h.count, f.h.nodeSize, c.compare)
	if err != nil {
		return c // not a tree BuildIndex makes: stored verbatim
	}
	c.t, c.ok = t, true
	for l := range t.lv {
		c.levels = append(c.levels, &windowReader{r: r, size: f.indexOff + int64(t.start[l]+t.lv[l])*nodeItemSize})
	}
	return c
}

func (c *indexCheck) compare(l int, n uint64, node *[nodeItemSize]byte) error {
	b, err := c.levels[l].get(c.base+int64(n)*nodeItemSize, nodeItemSize)
	if err != nil {
		return err
	}
	if !bytes.Equal(b, node[:]) {
		return errNotIndex
	}
	return nil
}

// leaf checks the next record's leaf and the parents it completes; only a
// read error is returned.
func (c *indexCheck) leaf(ft *Feature) error {
	if c == nil || !c.ok {
		return nil
	}
	return c.settle(c.t.leaf(ft.BBox, ft.Len))
}

// finish checks the last parents and reports whether the stored index is
// the tree over the records.
func (c *indexCheck) finish() (bool, error) {
	if !c.ok {
		return false, nil
	}
	err := c.settle(c.t.finish())
	return c.ok, err
}

func (c *indexCheck) settle(err error) error {
	if errors.Is(err, errNotIndex) {
		c.ok = false
		return nil
	}
	return err
}

// blocking holds the feature-block parameters (tests vary them).
type blocking struct{ min, avg, max, split int64 }

var defaultBlocking = blocking{BlockMin, BlockAvg, BlockMax, SplitMin}

// block is a run of consecutive feature records.
type block struct {
	off, len int64
	key      string
	bbox     *geom.BBox
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

// blocks groups feats (file order) into content-defined blocks.
func blocks(feats []Feature, p blocking) []block {
	k := &blocker{p: p, seen: map[string][]hashing.ID{}}
	for i := range feats {
		k.add(&feats[i])
	}
	k.close(false)
	return k.out
}

// blocker groups records, as they come in file order, into content-defined
// blocks. A block's key is "f/" + the short hash of its first feature, so it
// stays put when features elsewhere come and go, and even when the block's
// other features change. A repeated key for different content gets ".2",
// ".3", ….
type blocker struct {
	p    blocking
	out  []block
	seen map[string][]hashing.ID // base key → block digests, in order
	// The open block: n records from off to end, the first one's ID, the
	// hash of their IDs and the union of their bboxes.
	n        int
	off, end int64
	first    hashing.ID
	d        *hashing.Digest
	bb       geom.BBox
}

func (k *blocker) add(f *Feature) {
	if f.Len > k.p.split {
		k.close(false)
		k.extend(f)
		k.close(true)
		return
	}
	if k.n > 0 && k.end-k.off+f.Len > k.p.max {
		k.close(false)
	}
	k.extend(f)
	if k.end-k.off >= k.p.min && k.p.cuts(*f) {
		k.close(false)
	}
}

func (k *blocker) extend(f *Feature) {
	if k.n == 0 {
		k.off, k.first, k.d, k.bb = f.Off, f.ID, hashing.New(), geom.Empty
	}
	k.n++
	k.end = f.Off + f.Len
	k.d.Write(f.ID[:])
	if !f.Empty() {
		unionf(&k.bb, f.BBox)
	}
}

// close ends the open block, if any.
func (k *blocker) close(split bool) {
	if k.n == 0 {
		return
	}
	k.n = 0
	base := "f/" + k.first.Short()
	id, n := k.d.ID(), -1
	for i, x := range k.seen[base] {
		if x == id {
			n = i
			break
		}
	}
	if n < 0 {
		n = len(k.seen[base])
		k.seen[base] = append(k.seen[base], id)
	}
	key := base
	if n > 0 {
		key += "." + strconv.Itoa(n+1)
	}
	b := block{off: k.off, len: k.end - k.off, key: key, split: split}
	if bb := k.bb; bb.Valid() {
		b.bbox = &bb
	}
	k.out = append(k.out, b)
}

var geomTypes = []string{"Unknown", "Point", "LineString", "Polygon", "MultiPoint", "MultiLineString",
	"MultiPolygon", "GeometryCollection", "CircularString", "CompoundCurve", "CurvePolygon",
	"MultiCurve", "MultiSurface", "Curve", "Surface", "PolyhedralSurface", "TIN", "Triangle"}

// summary describes the file in one-line, deterministic fields.
func (f *file) summary(index string) []formats.Field {
	var out []formats.Field
	add := func(k, v string) { out = append(out, formats.Field{Name: k, Value: v}) }
	h := f.h
	add("features", strconv.Itoa(f.n))
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
	env := f.env
	if e := h.envelope; len(e) == 4 { // other lengths (a z range?) are not standard: use the features
		env = geom.BBox{MinX: e[0], MinY: e[1], MaxX: e[2], MaxY: e[3]}
	}
	if env.Valid() {
		add("bbox", formats.SummaryBBox(env))
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
