package parquet

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// dbp reads the DELTA_BINARY_PACKED encoding one value at a time, so that
// a page's lengths cost no memory per value: a header (block size,
// miniblocks per block, value count, first value), then blocks of a
// minimum delta, one bit width per miniblock and the miniblocks' deltas
// bit-packed.
type dbp struct {
	r          varintReader
	left       int   // values still to give
	per        int   // values per miniblock
	miniblocks int   // per block
	cur        int64 // the last value given
	started    bool

	minDelta int64
	widths   []byte // of the block's miniblocks not yet begun
	body     []byte // of the current miniblock
	w, i     int    // its bit width and the next value's index in it
}

// newDBP starts decoding n values from b.
func newDBP(b []byte, n int) (*dbp, error) {
	d := &dbp{r: varintReader{b: b}, left: n}
	blockSize, miniblocks, count := d.r.uvarint(), d.r.uvarint(), d.r.uvarint()
	d.cur = d.r.zigzag()
	if d.r.err != nil {
		return nil, d.r.err
	}
	if blockSize == 0 || blockSize%128 != 0 || blockSize > 1<<16 || miniblocks == 0 ||
		blockSize%miniblocks != 0 || (blockSize/miniblocks)%32 != 0 {
		return nil, fmt.Errorf("delta block of %d values in %d miniblocks", blockSize, miniblocks)
	}
	if count != uint64(n) {
		return nil, fmt.Errorf("delta header counts %d values, page %d", count, n)
	}
	d.per, d.miniblocks = int(blockSize/miniblocks), int(miniblocks)
	return d, nil
}

// next returns the next value.
func (d *dbp) next() (int64, error) {
	if d.left == 0 {
		return 0, errors.New("no values left")
	}
	d.left--
	if !d.started {
		d.started = true
		return d.cur, nil
	}
	for d.body == nil || d.i == d.per {
		if err := d.nextMiniblock(); err != nil {
			return 0, err
		}
	}
	d.cur += d.minDelta + int64(unpack(d.body, d.i, d.w))
	d.i++
	return d.cur, nil
}

// nextMiniblock starts the next miniblock, reading a block header first
// when the block's miniblocks are all begun.
func (d *dbp) nextMiniblock() error {
	if len(d.widths) == 0 {
		d.minDelta = d.r.zigzag()
		if d.r.err != nil {
			return d.r.err
		}
		if len(d.r.b) < d.miniblocks {
			return errors.New("truncated miniblock bit widths")
		}
		d.widths, d.r.b = d.r.b[:d.miniblocks], d.r.b[d.miniblocks:]
	}
	d.w, d.widths = int(d.widths[0]), d.widths[1:]
	if d.w > 64 {
		return fmt.Errorf("miniblock of bit width %d", d.w)
	}
	need := d.per * d.w / 8
	if len(d.r.b) < need {
		return errors.New("truncated miniblock")
	}
	d.body, d.r.b, d.i = d.r.b[:need], d.r.b[need:], 0
	return nil
}

// end reads the values left and returns the bytes after the encoding
// (the last block's unused miniblocks have no body).
func (d *dbp) end() ([]byte, error) {
	for d.left > 0 {
		if _, err := d.next(); err != nil {
			return nil, err
		}
	}
	return d.r.b, nil
}

// skipDBP returns the bytes after n values of DELTA_BINARY_PACKED at the
// start of b, and a decoder of those values.
func skipDBP(b []byte, n int) (rest []byte, values *dbp, err error) {
	d, err := newDBP(b, n)
	if err != nil {
		return nil, nil, err
	}
	if rest, err = d.end(); err != nil {
		return nil, nil, err
	}
	values, err = newDBP(b, n)
	return rest, values, err
}

// unpack returns value i of width w (≤ 64) bit-packed least significant
// bit first in b.
func unpack(b []byte, i, w int) uint64 {
	var v uint64
	bit := i * w
	for j := 0; j < w; {
		byteAt, off := bit/8, bit%8
		take := min(8-off, w-j)
		v |= uint64(b[byteAt]>>off&(1<<take-1)) << j
		j += take
		bit += take
	}
	return v
}

// deltaLengthValues visits n DELTA_LENGTH_BYTE_ARRAY values: their lengths
// delta-encoded, then their bytes end to end.
func deltaLengthValues(b []byte, n int, visit func([]byte) error) error {
	rest, lens, err := skipDBP(b, n)
	if err != nil {
		return fmt.Errorf("value lengths: %w", err)
	}
	for range n {
		l, err := lens.next()
		if err != nil {
			return fmt.Errorf("value lengths: %w", err)
		}
		if l < 0 || l > int64(len(rest)) {
			return fmt.Errorf("byte array of %d bytes, %d left", l, len(rest))
		}
		if err := visit(rest[:l:l]); err != nil {
			return err
		}
		rest = rest[l:]
	}
	return nil
}

// deltaByteValues visits n DELTA_BYTE_ARRAY values: the length of the
// prefix each shares with the one before, delta-encoded, then the
// suffixes as DELTA_LENGTH_BYTE_ARRAY.
func deltaByteValues(b []byte, n int, visit func([]byte) error) error {
	afterPrefixes, prefixes, err := skipDBP(b, n)
	if err != nil {
		return fmt.Errorf("prefix lengths: %w", err)
	}
	rest, lens, err := skipDBP(afterPrefixes, n)
	if err != nil {
		return fmt.Errorf("suffix lengths: %w", err)
	}
	var prev, cur []byte
	for i := range n {
		p, err := prefixes.next()
		if err != nil {
			return fmt.Errorf("prefix lengths: %w", err)
		}
		l, err := lens.next()
		if err != nil {
			return fmt.Errorf("suffix lengths: %w", err)
		}
		if p < 0 || p > int64(len(prev)) || l < 0 || l > int64(len(rest)) {
			return fmt.Errorf("value %d: prefix %d of %d bytes, suffix %d of %d left", i, p, len(prev), l, len(rest))
		}
		// A value is a prefix of the last one plus bytes of the page: the
		// two buffers stay within the page's size each.
		cur = append(append(cur[:0], prev[:p]...), rest[:l]...)
		rest = rest[l:]
		if err := visit(cur); err != nil {
			return err
		}
		prev, cur = cur, prev
	}
	return nil
}

// varintReader reads ULEB128 and zigzag numbers; the first error sticks.
type varintReader struct {
	b   []byte
	err error
}

func (r *varintReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, k := binary.Uvarint(r.b)
	if k <= 0 {
		r.err = errors.New("truncated or overlong varint")
		return 0
	}
	r.b = r.b[k:]
	return v
}

func (r *varintReader) zigzag() int64 {
	v := r.uvarint()
	return int64(v>>1) ^ -int64(v&1)
}
