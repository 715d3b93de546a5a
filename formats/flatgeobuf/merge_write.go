package flatgeobuf

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/chunkvc/chunkvc/geom"
)

// errNoCount: a header without a features_count field cannot be patched
// in place (flatbuffers leave out a field that holds its default, 0).
var errNoCount = errors.New("flatgeobuf: the header has no features_count field to patch")

// patchCountEnvelope sets, in place, header flatbuffer h's features_count
// and the first four values of its envelope (if it has one), which are
// fixed-width: the header keeps its length and every offset in it.
func patchCountEnvelope(h []byte, count uint64, env geom.BBox) error {
	t, err := root(h)
	if err != nil {
		return fmt.Errorf("flatgeobuf: header: %w", err)
	}
	if s, n, err := t.vector(1, 8); err != nil {
		return fmt.Errorf("flatgeobuf: header envelope: %w", err)
	} else if n >= 4 {
		for k, v := range env.Array() {
			binary.LittleEndian.PutUint64(h[s+8*uint64(k):], math.Float64bits(v))
		}
	}
	p, ok, err := t.field(8, 8)
	switch {
	case err != nil:
		return fmt.Errorf("flatgeobuf: header features_count: %w", err)
	case ok:
		binary.LittleEndian.PutUint64(h[p:], count)
	case count != 0:
		return errNoCount
	}
	return nil
}

// PatchHeader returns a copy of header flatbuffer h with features_count
// count and envelope env.
func PatchHeader(h []byte, count uint64, env geom.BBox) ([]byte, error) {
	out := append([]byte(nil), h...)
	return out, patchCountEnvelope(out, count, env)
}

// patchHeader sets the plan's header to its features and their extent.
func (p *MergePlan) patchHeader() error {
	h, err := PatchHeader(p.header, uint64(len(p.feats)), Extent(p.feats))
	if err != nil {
		return err
	}
	p.header = h
	if p.nodeSize > 0 && len(p.feats) > 0 {
		_, err = IndexSize(uint64(len(p.feats)), p.nodeSize)
	}
	return err
}

// indexLen is the byte size of the merged file's index.
func (p *MergePlan) indexLen() int64 {
	if p.nodeSize == 0 || len(p.feats) == 0 {
		return 0
	}
	n, _ := IndexSize(uint64(len(p.feats)), p.nodeSize) // patchHeader checked it
	return n
}

// WriteTo writes the merged file to w from ours and theirs (the sides
// PlanMerge read) and returns its size: magic, header, the index over the
// records (writeTree, a level's run at a time) and the records, copied
// through a window of each side and a buffer of the output.
func (p *MergePlan) WriteTo(ctx context.Context, w io.WriterAt, ours, theirs MergeSide) (int64, error) {
	head := append(append([]byte(nil), p.magic...), binary.LittleEndian.AppendUint32(nil, uint32(len(p.header)))...)
	head = append(head, p.header...)
	if _, err := w.WriteAt(head, 0); err != nil {
		return 0, err
	}
	pos := int64(len(head))
	if n := p.indexLen(); n > 0 {
		err := writeTree(uint64(len(p.feats)), p.nodeSize, io.NewOffsetWriter(w, pos), func(leaf func(geom.BBox, int64) error) error {
			for i := range p.feats {
				if err := leaf(p.feats[i].BBox, p.feats[i].Len); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
		pos += n
	}
	win := [3]*windowReader{nil, {r: ours.R, size: ours.Size}, {r: theirs.R, size: theirs.Size}}
	var buf []byte
	flush := func() error {
		_, err := w.WriteAt(buf, pos)
		pos += int64(len(buf))
		buf = buf[:0]
		return err
	}
	for i, ft := range p.feats {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
		}
		b, err := win[p.from[i]].get(ft.Off, ft.Len)
		if err != nil {
			return 0, err
		}
		buf = append(buf, b...)
		if len(buf) >= window {
			if err := flush(); err != nil {
				return 0, err
			}
		}
	}
	err := flush()
	return pos, err
}

// Check reads the merged file back as the adapter does and fails unless
// it holds exactly the plan's records, in its order, under the header's
// count and an index that is the tree over them (so a commit stores it
// as derived).
func (p *MergePlan) Check(ctx context.Context, r io.ReaderAt, size int64) error {
	f, err := parseHead(r, size)
	if err != nil {
		return err
	}
	if f.h.count != uint64(len(p.feats)) {
		return fmt.Errorf("flatgeobuf: the merged header counts %d features, the merge %d", f.h.count, len(p.feats))
	}
	var chk *indexCheck
	if f.indexLen > 0 {
		chk = newIndexCheck(f, r)
	}
	k := 0
	err = f.walk(ctx, r, size, true, func(ft *Feature) error {
		if k >= len(p.feats) || ft.ID != p.feats[k].ID {
			return fmt.Errorf("flatgeobuf: merged feature %d at %d is not the one merged", k, ft.Off)
		}
		k++
		return chk.leaf(ft)
	})
	if err != nil {
		return err
	}
	if (f.indexLen > 0) != (p.indexLen() > 0) {
		return errors.New("flatgeobuf: the merged file's index is not where the merge put it")
	}
	if chk != nil {
		if ok, err := chk.finish(); err != nil || !ok {
			return errors.Join(err, errNotIndex)
		}
	}
	return nil
}
