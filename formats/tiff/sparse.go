package tiff

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/chunkvc/chunkvc/formats"
	"io"
	"sort"
	"strconv"
	"strings"
)

// Sparse copies (checkout --bbox): the walk records every field that holds
// a file offset (first-IFD and next-IFD pointers, out-of-line tag values)
// and every block (tile or strip) with the positions of its offset and
// byte count, so that leaving blocks out can shift all of them.

type spField struct {
	pos   int64
	width int
	val   uint64
}

type spBlock struct {
	off, n uint64
	offF   spField
	cntF   spField
}

type spMap struct {
	bo      binary.ByteOrder
	ptrs    []spField
	values  [][2]int64 // out-of-line value extents
	blocks  []spBlock
	leaders bool // GDAL: [u32 size] before and 4 repeated bytes after each block
	tags    []spTag
}

// spTag is one IFD entry and where its value's n bytes are.
type spTag struct {
	tag, typ uint16
	count    uint64
	pos, n   int64
}

const spMaxBlocks = 1 << 28

func spTypeSize(t uint16) uint64 { return uint64(typeSize(t)) }

func walkSparse(ra io.ReaderAt, size int64) (*spMap, error) {
	read := func(off, n uint64) ([]byte, error) {
		if off > uint64(size) || n > uint64(size)-off {
			return nil, fmt.Errorf("tiff: %d bytes at %d pass the end of the %d-byte file", n, off, size)
		}
		b := make([]byte, n)
		if _, err := ra.ReadAt(b, int64(off)); err != nil && !(err == io.EOF && off+n == uint64(size)) {
			return nil, err
		}
		return b, nil
	}
	hdr, err := read(0, 8)
	if err != nil {
		return nil, err
	}
	tm := &spMap{}
	switch string(hdr[:2]) {
	case "II":
		tm.bo = binary.LittleEndian
	case "MM":
		tm.bo = binary.BigEndian
	default:
		return nil, errors.New("tiff: bad byte order mark")
	}
	uint := func(b []byte) uint64 {
		switch len(b) {
		case 2:
			return uint64(tm.bo.Uint16(b))
		case 4:
			return uint64(tm.bo.Uint32(b))
		}
		return tm.bo.Uint64(b)
	}
	big := false
	first := spField{pos: 4, width: 4}
	switch uint(hdr[2:4]) {
	case 42:
		first.val = uint(hdr[4:8])
	case 43:
		big = true
		h, err := read(0, 16)
		if err != nil {
			return nil, err
		}
		if uint(h[4:6]) != 8 {
			return nil, errors.New("tiff: BigTIFF offset size is not 8")
		}
		first = spField{pos: 8, width: 8, val: uint(h[8:16])}
	default:
		return nil, errors.New("tiff: not a TIFF")
	}
	ptrW, entW, cntW := uint64(4), uint64(12), uint64(2)
	if big {
		ptrW, entW, cntW = 8, 20, 8
	}
	tm.ptrs = append(tm.ptrs, first)
	if g, err := read(ptrW*2, 43); err == nil && strings.HasPrefix(string(g), "GDAL_STRUCTURAL_METADATA_SIZE=") {
		if n, err := strconv.ParseUint(string(g[30:36]), 10, 32); err == nil {
			if txt, err := read(ptrW*2+43, n); err == nil {
				s := string(txt)
				tm.leaders = strings.Contains(s, "BLOCK_LEADER=SIZE_AS_UINT4") && strings.Contains(s, "BLOCK_TRAILER=LAST_4_BYTES_REPEATED")
			}
		}
	}
	seen := map[uint64]bool{}
	type arr struct {
		pos   uint64
		typ   uint16
		count uint64
	}
	for off, nIFD := first.val, 0; off != 0; nIFD++ {
		if seen[off] || nIFD >= maxIFDs {
			return nil, errors.New("tiff: IFD loop or too many IFDs")
		}
		seen[off] = true
		cb, err := read(off, cntW)
		if err != nil {
			return nil, err
		}
		n := uint(cb)
		if n == 0 || n > maxEntries {
			return nil, fmt.Errorf("tiff: IFD at %d has %d entries", off, n)
		}
		ents, err := read(off+cntW, n*entW)
		if err != nil {
			return nil, err
		}
		arrays := map[uint16]arr{}
		for i := uint64(0); i < n; i++ {
			e := ents[i*entW : (i+1)*entW]
			tag, typ := uint16(uint(e[0:2])), uint16(uint(e[2:4]))
			var count uint64
			valPos := off + cntW + i*entW + 8
			if big {
				count, valPos = uint(e[4:12]), valPos+4
			} else {
				count = uint(e[4:8])
			}
			switch tag {
			case 330, 34665, 34853, 40965:
				return nil, fmt.Errorf("tiff: tag %d (a sub-IFD) is not supported by a partial checkout", tag)
			}
			ts := spTypeSize(typ)
			if ts == 0 {
				return nil, fmt.Errorf("tiff: tag %d has unknown type %d", tag, typ)
			}
			if count > uint64(size) || count*ts > uint64(size) {
				return nil, fmt.Errorf("tiff: tag %d count %d is too large", tag, count)
			}
			dataPos := valPos
			if count*ts > ptrW {
				v := uint(e[entW-ptrW:])
				tm.ptrs = append(tm.ptrs, spField{pos: int64(valPos), width: int(ptrW), val: v})
				if v > uint64(size) || count*ts > uint64(size)-v {
					return nil, fmt.Errorf("tiff: tag %d value passes the end of the file", tag)
				}
				tm.values = append(tm.values, [2]int64{int64(v), int64(v + count*ts)})
				dataPos = v
			}
			tm.tags = append(tm.tags, spTag{tag: tag, typ: typ, count: count, pos: int64(dataPos), n: int64(count * ts)})
			switch tag {
			case 273, 279, 324, 325:
				if ts != 2 && ts != 4 && ts != 8 || typ == 8 || typ == 9 || typ == 11 || typ == 12 || typ == 17 {
					return nil, fmt.Errorf("tiff: tag %d has type %d", tag, typ)
				}
				arrays[tag] = arr{dataPos, typ, count}
			}
		}
		nb, err := read(off+cntW+n*entW, ptrW)
		if err != nil {
			return nil, err
		}
		next := spField{pos: int64(off + cntW + n*entW), width: int(ptrW), val: uint(nb)}
		tm.ptrs = append(tm.ptrs, next)
		offT, cntT := uint16(324), uint16(325)
		if _, ok := arrays[324]; !ok {
			offT, cntT = 273, 279
		}
		oa, ok1 := arrays[offT]
		ca, ok2 := arrays[cntT]
		if ok1 != ok2 || oa.count != ca.count {
			return nil, fmt.Errorf("tiff: IFD at %d: block offsets and byte counts do not match", off)
		}
		if ok1 {
			if len(tm.blocks)+int(oa.count) > spMaxBlocks {
				return nil, errors.New("tiff: too many blocks")
			}
			ow, cw := spTypeSize(oa.typ), spTypeSize(ca.typ)
			ob, err := read(oa.pos, oa.count*ow)
			if err != nil {
				return nil, err
			}
			cbs, err := read(ca.pos, ca.count*cw)
			if err != nil {
				return nil, err
			}
			for i := uint64(0); i < oa.count; i++ {
				b := spBlock{
					offF: spField{pos: int64(oa.pos + i*ow), width: int(ow), val: uint(ob[i*ow : (i+1)*ow])},
					cntF: spField{pos: int64(ca.pos + i*cw), width: int(cw), val: uint(cbs[i*cw : (i+1)*cw])},
				}
				b.off, b.n = b.offF.val, b.cntF.val
				if b.n > 0 && (b.off > uint64(size) || b.n > uint64(size)-b.off) {
					return nil, fmt.Errorf("tiff: block at %d of %d bytes passes the end of the file", b.off, b.n)
				}
				tm.blocks = append(tm.blocks, b)
			}
		}
		off = next.val
	}
	return tm, nil
}

// SparsePlan is what a sparse copy leaves out and what it rewrites.
type SparsePlan struct {
	dropped [][2]int64 // sorted, merged ranges of the original file
	patches []spField
	bo      binary.ByteOrder
}

// Dropped returns the byte ranges of the original file left out.
func (pl *SparsePlan) Dropped() [][2]int64 { return pl.dropped }

// CheckSparse re-walks a written copy: it must parse like any TIFF.
func CheckSparse(r io.ReaderAt, size int64) error {
	_, err := walkSparse(r, size)
	return err
}

// PlanSparse walks the TIFF in r (size bytes) and plans a copy that keeps
// the tiles and strips for which keep(offset, length) is true and leaves
// the others out as sparse blocks (offset 0, byte count 0: GDAL reads them
// as nodata), shifting every offset in the file to match. GDAL's block
// leader and trailer go with their block. SubIFDs, EXIF and GPS IFDs are
// refused, as is any layout where kept bytes sit between dropped blocks.
func PlanSparse(r io.ReaderAt, size int64, keep func(off, n int64) bool) (*SparsePlan, error) {
	tm, err := walkSparse(r, size)
	if err != nil {
		return nil, err
	}
	kept := make([]bool, len(tm.blocks))
	var drops [][2]int64
	for i, b := range tm.blocks {
		if b.n == 0 || b.off == 0 {
			continue
		}
		a, e := int64(b.off), int64(b.off+b.n)
		if keep(a, e-a) {
			kept[i] = true
			continue
		}
		if tm.leaders && a >= 4 && e+4 <= size {
			var lb [4]byte
			if _, err := r.ReadAt(lb[:], a-4); err == nil && uint64(binary.LittleEndian.Uint32(lb[:])) == b.n {
				a, e = a-4, e+4
			}
		}
		drops = append(drops, [2]int64{a, e})
	}
	pl := &SparsePlan{dropped: formats.MergeRanges(drops), bo: tm.bo}
	if len(pl.dropped) == 0 {
		return pl, nil
	}
	// Nothing that is kept may sit inside a dropped range.
	inDrop := func(a, e int64) bool {
		i := sort.Search(len(pl.dropped), func(i int) bool { return pl.dropped[i][1] > a })
		return i < len(pl.dropped) && pl.dropped[i][0] < e
	}
	for i, b := range tm.blocks {
		if kept[i] && inDrop(int64(b.off), int64(b.off+b.n)) {
			return nil, fmt.Errorf("block at %d overlaps a dropped block", b.off)
		}
	}
	for _, v := range tm.values {
		if inDrop(v[0], v[1]) {
			return nil, fmt.Errorf("tag data at %d lies between tiles that are left out", v[0])
		}
	}
	for _, p := range tm.ptrs {
		if p.val != 0 && inDrop(int64(p.val), int64(p.val)+1) {
			return nil, fmt.Errorf("offset %d points into a dropped tile", p.val)
		}
	}
	before := make([]uint64, len(pl.dropped)+1) // bytes dropped before range i
	for i, r := range pl.dropped {
		before[i+1] = before[i] + uint64(r[1]-r[0])
	}
	shift := func(x uint64) uint64 {
		i := sort.Search(len(pl.dropped), func(i int) bool { return uint64(pl.dropped[i][1]) > x })
		return x - before[i]
	}
	for _, p := range tm.ptrs {
		if p.val != 0 {
			pl.patches = append(pl.patches, spField{p.pos, p.width, shift(p.val)})
		}
	}
	for i, b := range tm.blocks {
		switch {
		case b.n == 0 || b.off == 0:
		case kept[i]:
			pl.patches = append(pl.patches, spField{b.offF.pos, b.offF.width, shift(b.off)})
		default:
			pl.patches = append(pl.patches, spField{b.offF.pos, b.offF.width, 0}, spField{b.cntF.pos, b.cntF.width, 0})
		}
	}
	for _, p := range pl.patches {
		if inDrop(p.pos, p.pos+int64(p.width)) {
			return nil, fmt.Errorf("offset field at %d lies between tiles that are left out", p.pos)
		}
	}
	sort.Slice(pl.patches, func(i, j int) bool { return pl.patches[i].pos < pl.patches[j].pos })
	return pl, nil
}

// Kept returns the byte ranges of the original file that are written.
func (pl *SparsePlan) Kept(size int64) [][2]int64 {
	var out [][2]int64
	pos := int64(0)
	for _, d := range pl.dropped {
		if d[0] > pos {
			out = append(out, [2]int64{pos, d[0]})
		}
		pos = d[1]
	}
	if pos < size {
		out = append(out, [2]int64{pos, size})
	}
	return out
}

// Patch rewrites the offsets that fall in b, original bytes taken from
// position pos, before they are written out.
func (pl *SparsePlan) Patch(b []byte, pos int64) {
	bo := pl.bo
	end := pos + int64(len(b))
	i := sort.Search(len(pl.patches), func(i int) bool { return pl.patches[i].pos+int64(pl.patches[i].width) > pos })
	for ; i < len(pl.patches) && pl.patches[i].pos < end; i++ {
		p := pl.patches[i]
		var v [8]byte
		switch p.width {
		case 2:
			bo.PutUint16(v[:], uint16(p.val))
		case 4:
			bo.PutUint32(v[:], uint32(p.val))
		default:
			bo.PutUint64(v[:], p.val)
		}
		for k := 0; k < p.width; k++ {
			if q := p.pos + int64(k); q >= pos && q < end {
				b[q-pos] = v[k]
			}
		}
	}
}
