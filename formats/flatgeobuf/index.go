package flatgeobuf

import (
	"encoding/binary"
	"fmt"
	"math"
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
	lv, err := levels(uint64(len(feats)), nodeSize)
	if err != nil {
		return nil, err
	}
	size, err := IndexSize(uint64(len(feats)), nodeSize)
	if err != nil {
		return nil, err
	}
	out := make([]byte, size)
	total := uint64(size / nodeItemSize)
	// start[i] is the first node of level i (leaves are level 0, stored last).
	start := make([]uint64, len(lv))
	next := total
	for i, c := range lv {
		next -= c
		start[i] = next
	}
	put := func(i uint64, bb [4]float64, off uint64) {
		p := out[i*nodeItemSize : (i+1)*nodeItemSize]
		for k, v := range bb {
			binary.LittleEndian.PutUint64(p[8*k:], math.Float64bits(v))
		}
		binary.LittleEndian.PutUint64(p[32:], off)
	}
	boxes := make([][4]float64, total)
	var rel uint64
	for i, f := range feats {
		n := start[0] + uint64(i)
		boxes[n] = f.BBox
		put(n, f.BBox, rel)
		rel += uint64(f.Len)
	}
	for l := 0; l+1 < len(lv); l++ {
		pos, end, parent := start[l], start[l]+lv[l], start[l+1]
		for pos < end {
			first := pos
			bb := [4]float64(emptyBox)
			for j := 0; j < int(nodeSize) && pos < end; j++ {
				c := boxes[pos]
				bb[0], bb[1] = minf(bb[0], c[0]), minf(bb[1], c[1])
				bb[2], bb[3] = maxf(bb[2], c[2]), maxf(bb[3], c[3])
				pos++
			}
			boxes[parent] = bb
			put(parent, bb, first)
			parent++
		}
	}
	return out, nil
}
