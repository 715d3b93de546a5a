package tiff

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
)

// Merges (chunkvc merge-driver): a merged COG is one side's file with some
// tiles taken from the other side. Tiles change length when re-encoded,
// so every offset after a replaced tile moves; the walk of sparse.go finds
// them all, as it does for a sparse copy.

// Replacement is a block of the TIFF being spliced that is written with
// other bytes: N bytes at SrcOff of Src.
type Replacement struct {
	Off    int64 // the block's offset in the TIFF, as its IFD records it
	Src    io.ReaderAt
	SrcOff int64
	N      int64
}

// Splice writes the TIFF in r (size bytes) to w with the blocks named in
// repl replaced, rewriting every file offset and the replaced blocks'
// byte counts; GDAL's block leader and trailer are rewritten with their
// block. A block shared by several IFD entries, an empty block, or tag
// data between the blocks that move in ways the walk cannot follow, is
// refused. It returns the number of bytes written.
func Splice(w io.Writer, r io.ReaderAt, size int64, repl []Replacement) (int64, error) {
	sp, err := PlanSplice(r, size, repl)
	if err != nil {
		return 0, err
	}
	return sp.WriteFrom(w, r, 0)
}

// Spliced is a Splice worked out before a byte is written, so that a
// caller can splice a file in place: the bytes before Tail stay where
// they are, and only the offset fields in Head change among them; from
// Tail on, the bytes move with the replaced blocks.
type Spliced struct {
	edits    []spEdit
	pl       *SparsePlan
	size, to int64 // the file's size, and the spliced file's
	head     int64 // where the first offset field before tail is
	headEnd  int64 // where the last one ends
	tail     int64 // where the first edit starts
}

// PlanSplice works out Splice of the TIFF in r (size bytes) with the
// blocks named in repl replaced, refusing what Splice refuses.
func PlanSplice(r io.ReaderAt, size int64, repl []Replacement) (*Spliced, error) {
	tm, err := walkSparse(r, size)
	if err != nil {
		return nil, err
	}
	edits, err := tm.edits(r, size, repl)
	if err != nil {
		return nil, err
	}
	patches, err := tm.splicePatches(edits)
	if err != nil {
		return nil, err
	}
	sp := &Spliced{edits: edits, pl: &SparsePlan{patches: patches, bo: tm.bo}, size: size, to: size, tail: size}
	for _, e := range edits {
		sp.to += e.newLen() - (e.e - e.a)
	}
	if len(edits) > 0 {
		sp.tail = edits[0].a
	}
	// The fields before the first edit: the offsets of blocks and tag
	// data beyond it change, and a COG keeps them all in its header.
	sp.head, sp.headEnd = sp.tail, sp.tail
	for i, p := range patches {
		if p.pos >= sp.tail {
			break
		}
		if i == 0 {
			sp.head, sp.headEnd = p.pos, p.pos
		}
		sp.headEnd = max(sp.headEnd, p.pos+int64(p.width))
	}
	return sp, nil
}

// Size is the spliced file's size.
func (sp *Spliced) Size() int64 { return sp.to }

// Head is the range of the file, before Tail, that holds every offset
// field written there (empty when there is none): the only bytes before
// Tail that may change.
func (sp *Spliced) Head() (off, end int64) { return sp.head, min(sp.headEnd, sp.tail) }

// Tail is where the first replaced block (or its leader) starts: the
// spliced file differs from the original from there on, to its end.
func (sp *Spliced) Tail() int64 { return sp.tail }

// PatchHead turns b, the original bytes at off, into the spliced file's
// bytes there; off+len(b) must not pass Tail.
func (sp *Spliced) PatchHead(b []byte, off int64) { sp.pl.Patch(b, off) }

// WriteFrom writes the spliced file from offset from, which must not
// pass Tail (where both files have the same offsets), to w: r need hold
// the original's bytes from from on only. It returns the bytes written.
func (sp *Spliced) WriteFrom(w io.Writer, r io.ReaderAt, from int64) (int64, error) {
	if from < 0 || from > sp.tail {
		return 0, fmt.Errorf("tiff: splice written from %d, past its first replaced block at %d", from, sp.tail)
	}
	size, pl := sp.size, sp.pl
	written, pos := int64(0), from
	buf := make([]byte, 64<<10)
	copyOld := func(end int64) error {
		for pos < end {
			n := min(int64(len(buf)), end-pos)
			b := buf[:n]
			if _, err := r.ReadAt(b, pos); err != nil && !(errors.Is(err, io.EOF) && pos+n == size) {
				return fmt.Errorf("tiff: read %d bytes at %d: %w", n, pos, err)
			}
			pl.Patch(b, pos)
			k, err := w.Write(b)
			written += int64(k)
			if err != nil {
				return err
			}
			pos += n
		}
		return nil
	}
	for _, e := range sp.edits {
		if err := copyOld(e.a); err != nil {
			return written, err
		}
		n, err := e.write(w)
		written += n
		if err != nil {
			return written, err
		}
		pos = e.e
	}
	return written, copyOld(size)
}

// spEdit is one replaced byte range [a, e) of the old file.
type spEdit struct {
	a, e    int64
	leaders bool
	Replacement
}

func (e spEdit) newLen() int64 {
	if e.leaders {
		return e.N + 8
	}
	return e.N
}

// write writes the replacement, with leader and trailer when it has them.
func (e spEdit) write(w io.Writer) (int64, error) {
	var written int64
	if e.leaders {
		var lead [4]byte
		binary.LittleEndian.PutUint32(lead[:], uint32(e.N))
		k, err := w.Write(lead[:])
		written += int64(k)
		if err != nil {
			return written, err
		}
	}
	k, err := io.Copy(w, io.NewSectionReader(e.Src, e.SrcOff, e.N))
	written += k
	if err == nil && k != e.N {
		err = fmt.Errorf("tiff: replacement of block at %d: %d of %d bytes", e.Off, k, e.N)
	}
	if err != nil || !e.leaders {
		return written, err
	}
	var trail [4]byte
	if _, err := e.Src.ReadAt(trail[:], e.SrcOff+e.N-4); err != nil && !errors.Is(err, io.EOF) {
		return written, err
	}
	n, err := w.Write(trail[:])
	return written + int64(n), err
}

// edits matches repl to the walk's blocks: sorted, non-overlapping ranges.
func (tm *spMap) edits(r io.ReaderAt, size int64, repl []Replacement) ([]spEdit, error) {
	byOff := make(map[int64]Replacement, len(repl))
	for _, x := range repl {
		if x.N <= 0 || x.N > 1<<32-1 || (tm.leaders && x.N < 4) {
			return nil, fmt.Errorf("tiff: replacement of block at %d has %d bytes", x.Off, x.N)
		}
		byOff[x.Off] = x
	}
	uses := map[int64]int{}
	for _, b := range tm.blocks {
		uses[int64(b.off)]++
	}
	var edits []spEdit
	for _, b := range tm.blocks {
		x, ok := byOff[int64(b.off)]
		if !ok {
			continue
		}
		if b.n == 0 || b.off == 0 || uses[int64(b.off)] > 1 {
			return nil, fmt.Errorf("tiff: block at %d is empty or shared and cannot be replaced alone", b.off)
		}
		if b.cntF.width == 2 && x.N > 0xffff {
			return nil, fmt.Errorf("tiff: block at %d: %d bytes do not fit its SHORT byte count", b.off, x.N)
		}
		e := spEdit{a: int64(b.off), e: int64(b.off + b.n), Replacement: x}
		if tm.leaders && e.a >= 4 && e.e+4 <= size {
			var lb [4]byte
			if _, err := r.ReadAt(lb[:], e.a-4); err == nil && uint64(binary.LittleEndian.Uint32(lb[:])) == b.n {
				e.a, e.e, e.leaders = e.a-4, e.e+4, true
			}
		}
		edits = append(edits, e)
		delete(byOff, int64(b.off))
	}
	for off := range byOff {
		return nil, fmt.Errorf("tiff: no block at %d to replace", off)
	}
	sort.Slice(edits, func(i, j int) bool { return edits[i].a < edits[j].a })
	for i := 1; i < len(edits); i++ {
		if edits[i].a < edits[i-1].e {
			return nil, fmt.Errorf("tiff: blocks at %d and %d overlap", edits[i-1].Off, edits[i].Off)
		}
	}
	return edits, nil
}

// splicePatches is every offset field's new value once edits are made,
// sorted by position, and the replaced blocks' byte counts.
func (tm *spMap) splicePatches(edits []spEdit) ([]spField, error) {
	before := make([]int64, len(edits)+1) // length change of edits before i
	for i, e := range edits {
		before[i+1] = before[i] + e.newLen() - (e.e - e.a)
	}
	// idx is the number of edits that end at or before x, and whether x
	// lies inside one.
	idx := func(x int64) (int, bool) {
		i := sort.Search(len(edits), func(i int) bool { return edits[i].e > x })
		return i, i < len(edits) && edits[i].a <= x
	}
	shift := func(x uint64, what string) (uint64, error) {
		i, inside := idx(int64(x))
		if inside {
			return 0, fmt.Errorf("tiff: %s at %d lies inside a replaced block", what, x)
		}
		return uint64(int64(x) + before[i]), nil
	}
	var out []spField
	for _, v := range tm.values {
		if i, inside := idx(v[0]); inside || (i < len(edits) && edits[i].a < v[1]) {
			return nil, fmt.Errorf("tiff: tag data at %d overlaps a replaced block", v[0])
		}
	}
	for _, p := range tm.ptrs {
		if _, err := shift(uint64(p.pos), "offset field"); err != nil {
			return nil, err
		}
		if p.val != 0 {
			v, err := shift(p.val, "IFD or tag offset")
			if err != nil {
				return nil, err
			}
			out = append(out, spField{p.pos, p.width, v})
		}
	}
	for _, b := range tm.blocks {
		if b.n == 0 || b.off == 0 {
			continue
		}
		i, inside := idx(int64(b.off))
		if !inside {
			out = append(out, spField{b.offF.pos, b.offF.width, uint64(int64(b.off) + before[i])})
			continue
		}
		e := edits[i]
		if e.Off != int64(b.off) {
			return nil, fmt.Errorf("tiff: block at %d overlaps the replaced block at %d", b.off, e.Off)
		}
		start := e.a + before[i]
		if e.leaders {
			start += 4
		}
		out = append(out, spField{b.offF.pos, b.offF.width, uint64(start)}, spField{b.cntF.pos, b.cntF.width, uint64(e.N)})
	}
	for _, p := range out {
		if _, inside := idx(p.pos); inside {
			return nil, fmt.Errorf("tiff: offset field at %d lies inside a replaced block", p.pos)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pos < out[j].pos })
	return out, nil
}

// Skeleton is a digest of everything in a TIFF but where its blocks are
// and how long they are: the IFD chain, every tag and its value (block
// offsets and byte counts by count only), GDAL's structural metadata. Two
// files with the same Skeleton differ in their blocks' bytes only, so
// blocks can be taken from one into the other (Splice) without losing a
// change to the rest.
func Skeleton(r io.ReaderAt, size int64) ([32]byte, error) {
	tm, err := walkSparse(r, size)
	if err != nil {
		return [32]byte{}, err
	}
	h := sha256.New()
	var w [8]byte
	put := func(v uint64) {
		binary.LittleEndian.PutUint64(w[:], v)
		h.Write(w[:])
	}
	put(uint64(len(tm.ptrs)))
	if tm.leaders {
		put(1)
	}
	for _, t := range tm.tags {
		put(uint64(t.tag)<<16 | uint64(t.typ))
		put(t.count)
		switch t.tag {
		case 273, 279, 324, 325:
			continue
		}
		if _, err := io.Copy(h, io.NewSectionReader(r, t.pos, t.n)); err != nil {
			return [32]byte{}, fmt.Errorf("tiff: tag %d value at %d: %w", t.tag, t.pos, err)
		}
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out, nil
}
