package parquet

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// A merge of two versions of a Parquet file takes each row group whole
// from one side: its column chunks are copied byte for byte, so every page
// keeps its chunk, and the footer is rebuilt from the sides' footers with
// the offsets moved to where the chunks now sit. Row groups are written in
// order after "PAR1", then the bloom filters, column indexes and offset
// indexes (page offsets moved too) of every column chunk, then the footer.
// What is not accounted for by a column chunk or its indexes is not
// copied: the caller checks the merged file holds exactly the merged
// chunks.

// MergeSide is one version of the file: the base's footer alone is read.
type MergeSide struct {
	R    io.ReaderAt
	Size int64 // 0: no such version (a merge without a base)
}

// pqSide is a side's decoded footer.
type pqSide struct {
	r    io.ReaderAt
	meta *fileMeta
	tree *tvalue
	end  int64 // where the data ends (the footer starts)
}

func openSide(s MergeSide, what string) (*pqSide, error) {
	footer, end, err := readFooter(s.R, s.Size)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	m, err := decodeFooter(footer)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if m.encrypted {
		return nil, fmt.Errorf("%s: encrypted columns", what)
	}
	t, _, err := decodeStruct(footer)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return &pqSide{r: s.R, meta: m, tree: t, end: end}, nil
}

// RowGroupRows returns the first row and the row count of each row group
// of the file (read from its footer alone).
func RowGroupRows(r io.ReaderAt, size int64) ([][2]int64, error) {
	m, _, err := openFooter(r, size)
	if err != nil {
		return nil, err
	}
	out := make([][2]int64, len(m.rowGroups))
	var first int64
	for i, g := range m.rowGroups {
		out[i] = [2]int64{first, g.numRows}
		first += g.numRows
	}
	return out, nil
}

// MergeRowGroups writes to w the file whose row group i is theirs' when
// fromTheirs[i], else ours'; len(fromTheirs) is how many it has. The
// file's metadata other than its row groups (schema, key-value metadata
// with GeoParquet's "geo", created_by) is taken whole from the side that
// changed it against the base, and must be the same on both otherwise.
// Any error says why the sides cannot be merged this way; nothing is
// then known about what w got.
func MergeRowGroups(w io.Writer, base, ours, theirs MergeSide, fromTheirs []bool) (int64, error) {
	sides := [2]*pqSide{}
	var err error
	if sides[0], err = openSide(ours, "our file"); err != nil {
		return 0, err
	}
	if sides[1], err = openSide(theirs, "their file"); err != nil {
		return 0, err
	}
	if !bytes.Equal(sides[0].meta.schemaRaw, sides[1].meta.schemaRaw) {
		return 0, errors.New("the schema differs between the sides")
	}
	fileTree, err := fileLevel(base, sides)
	if err != nil {
		return 0, err
	}
	mw := &mergeWriter{w: w}
	mw.write(magic)
	var rows int64
	var placed []placedGroup
	for i, t := range fromTheirs {
		s := sides[b2i(t)]
		if i >= len(s.meta.rowGroups) {
			return 0, fmt.Errorf("row group %d is not in the side it is taken from", i)
		}
		pg, err := mw.copyGroup(s, i)
		if err != nil {
			return 0, fmt.Errorf("row group %d: %w", i, err)
		}
		placed = append(placed, pg)
		rows += s.meta.rowGroups[i].numRows
	}
	if err := mw.indexes(placed); err != nil {
		return 0, err
	}
	if mw.err != nil {
		return 0, mw.err
	}
	groups := make([]tvalue, len(placed))
	for i, pg := range placed {
		groups[i] = *pg.tree
	}
	ft := *fileTree
	ft.fields = nil
	for _, f := range fileTree.fields {
		switch f.id {
		case 3:
			f.v = tvalue{typ: tI64, i: rows}
		case 4:
			f.v = tvalue{typ: tList, elem: tStruct, items: groups}
		}
		ft.fields = append(ft.fields, f)
	}
	footer := ft.encode(nil)
	mw.write(footer)
	mw.write([]byte{byte(len(footer)), byte(len(footer) >> 8), byte(len(footer) >> 16), byte(len(footer) >> 24)})
	mw.write(magic)
	return mw.n, mw.err
}

// fileLevel picks the FileMetaData whose fields but num_rows and
// row_groups the merge keeps: the sides' when they agree, else the one
// that changed them against the base.
func fileLevel(base MergeSide, sides [2]*pqSide) (*tvalue, error) {
	rest := func(t *tvalue) []byte {
		c := *t
		c.fields = nil
		for _, f := range t.fields {
			if f.id != 3 && f.id != 4 {
				c.fields = append(c.fields, f)
			}
		}
		return c.encode(nil)
	}
	o, t := rest(sides[0].tree), rest(sides[1].tree)
	if bytes.Equal(o, t) {
		return sides[0].tree, nil
	}
	if base.Size > 0 {
		b, err := openSide(base, "the base file")
		if err != nil {
			return nil, err
		}
		switch bb := rest(b.tree); {
		case bytes.Equal(bb, o):
			return sides[1].tree, nil
		case bytes.Equal(bb, t):
			return sides[0].tree, nil
		}
	}
	return nil, errors.New("the file metadata (key-value metadata such as geo, created_by) changed on both sides")
}

// mergeWriter counts what it writes; the first error sticks.
type mergeWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (m *mergeWriter) write(b []byte) {
	if m.err != nil {
		return
	}
	n, err := m.w.Write(b)
	m.n += int64(n)
	m.err = err
}

func (m *mergeWriter) copyFrom(r io.ReaderAt, off, n int64) {
	if m.err != nil {
		return
	}
	k, err := io.Copy(m.w, io.NewSectionReader(r, off, n))
	m.n += k
	if err == nil && k != n {
		err = io.ErrUnexpectedEOF
	}
	m.err = err
}

// placedGroup is a row group copied into the merged file: where its
// chunks came from and moved by, and its tree (whose column chunks get
// their index offsets once the indexes are written).
type placedGroup struct {
	s          *pqSide
	idx        int
	start, end int64 // in the source
	delta      int64
	tree       *tvalue
}

// copyGroup copies row group i of s (its column chunks, which must lie
// back to back) and returns its tree with the data offsets moved.
func (m *mergeWriter) copyGroup(s *pqSide, i int) (placedGroup, error) {
	g := s.meta.rowGroups[i]
	start, end := int64(-1), int64(-1)
	for j, c := range g.cols {
		if !c.hasMeta || c.external || c.crypto {
			return placedGroup{}, fmt.Errorf("column chunk %d has no inline plain metadata", j)
		}
		cs := c.dataPage
		if c.dictPage > 0 && c.dictPage < cs {
			cs = c.dictPage
		}
		if start >= 0 && cs != end {
			return placedGroup{}, fmt.Errorf("column chunk %d does not follow the one before", j)
		}
		if start < 0 {
			start = cs
		}
		end = cs + c.totalCompressed
	}
	if start < 4 || end > s.end || end < start {
		return placedGroup{}, errors.New("its column chunks are out of the data")
	}
	pg := placedGroup{s: s, idx: i, start: start, end: end, delta: m.n - start}
	m.copyFrom(s.r, start, end-start)
	rgs := s.tree.field(4, tList)
	if rgs == nil || i >= len(rgs.items) {
		return pg, errors.New("the footer has no such row group")
	}
	t := cloneTree(&rgs.items[i])
	in := func(off int64) bool { return off >= start && off <= end }
	if fo := t.field(5, tI64); fo != nil && in(fo.i) {
		fo.i += pg.delta
	}
	cols := t.field(1, tList)
	if cols == nil || len(cols.items) != len(g.cols) {
		return pg, errors.New("the footer's column chunks do not decode")
	}
	for j := range cols.items {
		cc := &cols.items[j]
		if fo := cc.field(2, tI64); fo != nil && fo.i != 0 {
			if !in(fo.i) {
				return pg, fmt.Errorf("column chunk %d's file_offset is outside it", j)
			}
			fo.i += pg.delta
		}
		md := cc.field(3, tStruct)
		for _, id := range []int16{9, 10, 11} {
			if v := md.field(id, tI64); v != nil && (id == 9 || v.i != 0) {
				if !in(v.i) {
					return pg, fmt.Errorf("column chunk %d has a page offset outside it", j)
				}
				v.i += pg.delta
			}
		}
	}
	pg.tree = t
	return pg, nil
}

// cloneTree copies a tree deep enough that editing its numbers and
// fields leaves the original alone.
func cloneTree(v *tvalue) *tvalue {
	c := *v
	if v.items != nil {
		c.items = make([]tvalue, len(v.items))
		for i := range v.items {
			c.items[i] = *cloneTree(&v.items[i])
		}
	}
	if v.fields != nil {
		c.fields = make([]tfield, len(v.fields))
		for i, f := range v.fields {
			c.fields[i] = tfield{id: f.id, v: *cloneTree(&f.v)}
		}
	}
	return &c
}

// indexes writes the bloom filters, column indexes and offset indexes of
// the placed row groups, setting their offsets in the groups' trees.
func (m *mergeWriter) indexes(placed []placedGroup) error {
	each := func(fn func(pg placedGroup, c column, cc *tvalue) error) error {
		for _, pg := range placed {
			cols := pg.tree.field(1, tList)
			for j, c := range pg.s.meta.rowGroups[pg.idx].cols {
				if err := fn(pg, c, &cols.items[j]); err != nil {
					return fmt.Errorf("row group %d column %d: %w", pg.idx, j, err)
				}
			}
		}
		return m.err
	}
	err := each(func(pg placedGroup, c column, cc *tvalue) error {
		if c.bloomOff <= 0 {
			return nil
		}
		n := int64(c.bloomLen)
		if n <= 0 {
			n = bloomLength(pg.s.r, c.bloomOff, pg.s.end)
		}
		if n <= 0 || c.bloomOff+n > pg.s.end {
			return errors.New("its bloom filter cannot be measured")
		}
		cc.field(3, tStruct).field(14, tI64).i = m.n
		m.copyFrom(pg.s.r, c.bloomOff, n)
		return nil
	})
	if err != nil {
		return err
	}
	err = each(func(pg placedGroup, c column, cc *tvalue) error {
		if c.ciLen <= 0 {
			return nil
		}
		if c.ciOff < 4 || c.ciOff+int64(c.ciLen) > pg.s.end {
			return errors.New("its column index is out of the data")
		}
		cc.field(6, tI64).i = m.n
		m.copyFrom(pg.s.r, c.ciOff, int64(c.ciLen))
		return nil
	})
	if err != nil {
		return err
	}
	return each(func(pg placedGroup, c column, cc *tvalue) error {
		if c.oiLen <= 0 {
			return nil
		}
		oi, err := m.offsetIndex(pg, c)
		if err != nil {
			return err
		}
		cc.field(4, tI64).i = m.n
		cc.field(5, tI32).i = int64(len(oi))
		m.write(oi)
		return nil
	})
}

// offsetIndex reads c's OffsetIndex and moves its page offsets with the
// row group.
func (m *mergeWriter) offsetIndex(pg placedGroup, c column) ([]byte, error) {
	if c.oiOff < 4 || c.oiOff+int64(c.oiLen) > pg.s.end {
		return nil, errors.New("its offset index is out of the data")
	}
	b := make([]byte, c.oiLen)
	if err := readAt(pg.s.r, b, c.oiOff); err != nil {
		return nil, err
	}
	t, n, err := decodeStruct(b)
	if err != nil || n != len(b) {
		return nil, fmt.Errorf("its offset index does not decode: %v", err)
	}
	locs := t.field(1, tList)
	if locs == nil {
		return nil, errors.New("its offset index has no page locations")
	}
	for i := range locs.items {
		off := locs.items[i].field(1, tI64)
		if off == nil || off.i < pg.start || off.i >= pg.end {
			return nil, errors.New("its offset index has a page outside the row group")
		}
		off.i += pg.delta
	}
	return t.encode(nil), nil
}
