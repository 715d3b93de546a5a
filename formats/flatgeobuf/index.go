package flatgeobuf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/chunkvc/chunkvc/geom"
)

// nodeItemSize is the size of one packed R-tree node: minX, minY, maxX,
// maxY (float64) and offset (uint64), little-endian.
const nodeItemSize = 40

// levels returns the node count of each R-tree level, leaves first.
func levels(n uint64, nodeSize uint16) ([]uint64, error) {
	if nodeSize < 2 {
		return nil, fmt.Errorf("flatgeobuf: index node size %d is below 2", nodeSize)
	}
	if n == 0 || n > maxCount {
		return nil, fmt.Errorf("flatgeobuf: index over %d features is out of range", n)
	}
	out := []uint64{n}
	for { // do … while n != 1: one feature still gets a root above its leaf
		n = (n + uint64(nodeSize) - 1) / uint64(nodeSize)
		out = append(out, n)
		if n == 1 {
			return out, nil
		}
	}
}

// IndexSize is the byte size of the packed Hilbert R-tree over n features
// with the given node size (FlatGeobuf's numNodes formula × 40).
func IndexSize(n uint64, nodeSize uint16) (int64, error) {
	lv, err := levels(n, nodeSize)
	if err != nil {
		return 0, err
	}
	var total uint64
	for _, c := range lv {
		total += c
	}
	if total > math.MaxInt64/nodeItemSize {
		return 0, fmt.Errorf("flatgeobuf: index over %d features is too large", n)
	}
	return int64(total) * nodeItemSize, nil
}

// BuildIndex rebuilds the packed Hilbert R-tree that FlatGeobuf writers
// store after the header, from the feature records in file order (the
// writer sorted them along the Hilbert curve before writing) and the
// header's node size. Leaves are the features' bboxes and their record
// offsets relative to the first record; each parent covers up to nodeSize
// consecutive children and stores the node index of its first child; the
// levels are stored root first.
func BuildIndex(feats []Feature, nodeSize uint16) ([]byte, error) {
	size, err := IndexSize(uint64(len(feats)), nodeSize)
	if err != nil {
		return nil, err
	}
	out := make([]byte, size)
	t, err := newTree(uint64(len(feats)), nodeSize, func(_ int, n uint64, node *[nodeItemSize]byte) error {
		copy(out[n*nodeItemSize:], node[:])
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i := range feats {
		if err := t.leaf(feats[i].BBox, feats[i].Len); err != nil {
			return nil, err
		}
	}
	if err := t.finish(); err != nil {
		return nil, err
	}
	return out, nil
}

// errNotIndex: the nodes are not those of the tree over the records (more
// records than the header counts, or a stored node that differs).
var errNotIndex = errors.New("flatgeobuf: the index is not the tree over the records")

// tree makes the nodes of the tree BuildIndex describes from the leaves
// in order, holding only the parent being filled on each level, so that
// checking or writing an index costs no memory per feature. Each node goes
// to emit once complete, with its level (0: leaves) and its index n in
// the stored order (its byte offset in the index is n·40); a level's nodes
// come in increasing n.
type tree struct {
	nodeSize uint64
	lv       []uint64 // per level, leaves first: node count
	start    []uint64 // per level: index of its first node
	done     []uint64 // per level: nodes emitted
	open     []parent // per level above the leaves: the node being filled
	rel      uint64   // offset of the next leaf's record from the first's
	emit     func(level int, n uint64, node *[nodeItemSize]byte) error
	node     [nodeItemSize]byte
}

type parent struct {
	bb    geom.BBox
	kids  uint64
	first uint64 // index of its first child
}

func newTree(count uint64, nodeSize uint16, emit func(int, uint64, *[nodeItemSize]byte) error) (*tree, error) {
	lv, err := levels(count, nodeSize)
	if err != nil {
		return nil, err
	}
	if _, err := IndexSize(count, nodeSize); err != nil {
		return nil, err
	}
	t := &tree{nodeSize: uint64(nodeSize), lv: lv, emit: emit,
		start: make([]uint64, len(lv)), done: make([]uint64, len(lv)), open: make([]parent, len(lv))}
	var total uint64
	for _, c := range lv {
		total += c
	}
	for i, c := range lv {
		total -= c
		t.start[i] = total
		t.open[i].bb = geom.Empty
	}
	return t, nil
}

// leaf adds the next record: its bbox and its length, prefix included.
func (t *tree) leaf(bb geom.BBox, recLen int64) error {
	if t.done[0] == t.lv[0] {
		return errNotIndex
	}
	n := t.start[0] + t.done[0]
	t.done[0]++
	off := t.rel
	t.rel += uint64(recLen)
	return t.put(0, n, bb, off)
}

// put emits node n of level l and adds it to its parent.
func (t *tree) put(l int, n uint64, bb geom.BBox, off uint64) error {
	for k, v := range bb.Array() {
		binary.LittleEndian.PutUint64(t.node[8*k:], math.Float64bits(v))
	}
	binary.LittleEndian.PutUint64(t.node[32:], off)
	if err := t.emit(l, n, &t.node); err != nil {
		return err
	}
	if l+1 == len(t.lv) {
		return nil
	}
	p := &t.open[l+1]
	if p.kids == 0 {
		p.first = n
	}
	unionf(&p.bb, bb)
	if p.kids++; p.kids == t.nodeSize {
		return t.close(l + 1)
	}
	return nil
}

// close emits the parent being filled on level l.
func (t *tree) close(l int) error {
	p := t.open[l]
	t.open[l] = parent{bb: geom.Empty}
	n := t.start[l] + t.done[l]
	t.done[l]++
	return t.put(l, n, p.bb, p.first)
}

// finish emits the parents left partly filled, leaves up; every leaf must
// have come.
func (t *tree) finish() error {
	if t.done[0] != t.lv[0] {
		return errNotIndex
	}
	for l := 1; l < len(t.lv); l++ {
		if t.open[l].kids > 0 {
			if err := t.close(l); err != nil {
				return err
			}
		}
		if t.done[l] != t.lv[l] {
			return fmt.Errorf("flatgeobuf: index level %d has %d nodes, want %d", l, t.done[l], t.lv[l])
		}
	}
	return nil
}
