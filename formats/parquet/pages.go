package parquet

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
)

// The values of a BYTE_ARRAY column chunk, decoded here rather than with
// parquet-go: linking parquet-go's reader (and, through it, protobuf)
// cost every chunkvc command about 3 ms of start-up and 5 MB of binary,
// for the one thing the adapter decodes, the WKB values of a geometry
// column. What is decoded: data pages v1 and v2 and dictionary pages;
// PLAIN, PLAIN_DICTIONARY, RLE_DICTIONARY, DELTA_LENGTH_BYTE_ARRAY and
// DELTA_BYTE_ARRAY values; RLE levels (v1 with
// their length prefix, v2 bare); UNCOMPRESSED, SNAPPY, GZIP, ZSTD,
// BROTLI, LZ4 and LZ4_RAW (codecs.go). Anything else (LZO) is an error,
// and the row group gets no decoded footprint.

// Page types and encodings (parquet.thrift).
const (
	pageData       = 0
	pageDictionary = 2
	pageDataV2     = 3

	encPlain       = 0
	encPlainDict   = 2
	encRLE         = 3
	encDeltaLength = 6 // DELTA_LENGTH_BYTE_ARRAY
	encDeltaBytes  = 7 // DELTA_BYTE_ARRAY
	encRLEDict     = 8
)

// levelInfo says how a column's values are levelled: the largest
// repetition and definition levels (0 for a required top-level column).
type levelInfo struct{ maxRep, maxDef int }

// byteArrays calls visit with every non-null value of the BYTE_ARRAY
// column chunk chunk (pages compressed with codec), checking each page
// against the decode limits (checkPage) before it decodes it. The slices
// visit gets are only valid during the call.
func byteArrays(chunk []byte, codec int32, lv levelInfo, visit func([]byte) error) error {
	var dict [][]byte
	return eachPage(chunk, func(p pageInfo, body []byte) error {
		switch p.kind {
		case pageDictionary:
			if p.encoding != encPlain && p.encoding != encPlainDict {
				return fmt.Errorf("dictionary page in encoding %d", p.encoding)
			}
			data, err := decompress(codec, body, p.uncompressed)
			if err != nil {
				return err
			}
			if dict, err = plainByteArrays(data, int(p.values), nil); err != nil {
				return fmt.Errorf("dictionary page: %w", err)
			}
		case pageData, pageDataV2:
			return dataPage(p, body, codec, lv, dict, visit)
		}
		return nil
	})
}

// eachPage calls page with the header and body of every page of chunk,
// each checked against the decode limits (checkPage) first.
func eachPage(chunk []byte, page func(p pageInfo, body []byte) error) error {
	var total int64
	for pos := 0; pos < len(chunk); {
		p, err := readPageInfo(chunk[pos:min(len(chunk), pos+maxHeader)])
		if err != nil {
			return err
		}
		if err := checkPage(p, len(chunk)-pos-p.hdr, &total); err != nil {
			return err
		}
		body := chunk[pos+p.hdr : pos+p.hdr+int(p.size)]
		pos += p.hdr + int(p.size)
		if err := page(p, body); err != nil {
			return err
		}
	}
	return nil
}

// dataPage visits the non-null values of one data page.
func dataPage(p pageInfo, body []byte, codec int32, lv levelInfo, dict [][]byte, visit func([]byte) error) error {
	pg, err := splitPage(p, body, codec, lv)
	if err != nil {
		return err
	}
	switch p.encoding {
	case encPlain:
		_, err := plainByteArrays(pg.values, pg.present, visit)
		return err
	case encPlainDict, encRLEDict:
		return dictValues(pg.values, pg.present, dict, visit)
	case encDeltaLength:
		return deltaLengthValues(pg.values, pg.present, visit)
	case encDeltaBytes:
		return deltaByteValues(pg.values, pg.present, visit)
	}
	return fmt.Errorf("data page in encoding %d", p.encoding)
}

// page is a data page split into its levels and its values' bytes.
type page struct {
	rep, def []uint8 // nil when the column has no such levels
	present  int     // values not null: definition level at its max
	values   []byte  // decompressed
}

// splitPage decompresses a data page (v1 or v2) and decodes its levels.
func splitPage(p pageInfo, body []byte, codec int32, lv levelInfo) (page, error) {
	pg := page{present: int(p.values)}
	var data []byte
	var err error
	if p.kind == pageDataV2 {
		// Levels lead the body uncompressed and without length prefixes.
		if p.repLevels > p.levels {
			return pg, errors.New("data page v2 level lengths do not add up")
		}
		if lv.maxRep > 0 {
			if pg.rep, err = levels(body[:p.repLevels], lv.maxRep, int(p.values)); err != nil {
				return pg, fmt.Errorf("repetition levels: %w", err)
			}
		}
		if lv.maxDef > 0 {
			if pg.def, err = levels(body[p.repLevels:p.levels], lv.maxDef, int(p.values)); err != nil {
				return pg, fmt.Errorf("definition levels: %w", err)
			}
		}
		data = body[p.levels:]
		if !p.v2NotCompressed {
			if data, err = decompress(codec, data, p.uncompressed-p.levels); err != nil {
				return pg, err
			}
		}
	} else {
		if data, err = decompress(codec, body, p.uncompressed); err != nil {
			return pg, err
		}
		if lv.maxRep > 0 {
			if pg.rep, data, err = levelRun(data, p.repEncoding, lv.maxRep, int(p.values)); err != nil {
				return pg, fmt.Errorf("repetition levels: %w", err)
			}
		}
		if lv.maxDef > 0 {
			if pg.def, data, err = levelRun(data, p.defEncoding, lv.maxDef, int(p.values)); err != nil {
				return pg, fmt.Errorf("definition levels: %w", err)
			}
		}
	}
	if lv.maxDef > 0 {
		pg.present = 0
		for _, d := range pg.def {
			if int(d) == lv.maxDef {
				pg.present++
			}
		}
	}
	pg.values = data
	return pg, nil
}

// levelRun reads the v1 levels of n values (a 4-byte length, then the RLE
// hybrid) from the start of data, and returns them and the bytes after.
func levelRun(data []byte, enc int32, max, n int) (lv []uint8, rest []byte, err error) {
	if enc != encRLE {
		return nil, nil, fmt.Errorf("level encoding %s is %w", encodingName(enc), ErrUnsupported)
	}
	if len(data) < 4 {
		return nil, nil, errors.New("truncated level length")
	}
	l := binary.LittleEndian.Uint32(data)
	if uint64(l) > uint64(len(data)-4) {
		return nil, nil, fmt.Errorf("levels of %d bytes, %d left", l, len(data)-4)
	}
	lv, err = levels(data[4:4+l], max, n)
	return lv, data[4+l:], err
}

// levels decodes n levels of at most max (≤ maxLevel) from the RLE/bit-packed hybrid b.
func levels(b []byte, max, n int) ([]uint8, error) {
	out := make([]uint8, 0, n)
	err := rleHybrid(b, bits.Len(uint(max)), n, func(v uint64, k int) error {
		if v > uint64(max) {
			return fmt.Errorf("level %d over the maximum %d", v, max)
		}
		for range k {
			out = append(out, uint8(v))
		}
		return nil
	})
	if err == nil && len(out) != n {
		err = fmt.Errorf("%d levels of %d", len(out), n)
	}
	return out, err
}

// rleHybrid decodes n values of bit width w (0..32) from the RLE/bit-packed
// hybrid b, giving each run to f as a value and a repeat count. Bit-packed
// groups past n (padding) are ignored.
func rleHybrid(b []byte, w, n int, f func(v uint64, k int) error) error {
	if w < 0 || w > 32 {
		return fmt.Errorf("bit width %d", w)
	}
	for n > 0 {
		h, k := binary.Uvarint(b)
		if k <= 0 {
			return errors.New("truncated run header")
		}
		b = b[k:]
		if h&1 == 0 { // an RLE run: its count, then the value in ceil(w/8) bytes
			run := h >> 1
			vb := (w + 7) / 8
			if len(b) < vb {
				return errors.New("truncated RLE run")
			}
			var v uint64
			for i := range vb {
				v |= uint64(b[i]) << (8 * i)
			}
			b = b[vb:]
			k := int(min(run, uint64(n)))
			if err := f(v, k); err != nil {
				return err
			}
			n -= k
			continue
		}
		// Bit-packed: groups of 8 values, w bytes each. Some writers
		// (Impala) end the last run with only the bytes its values take.
		groups := h >> 1
		vals, span := n, len(b) // a run past the values or the bytes left
		if groups <= uint64(n) {
			vals = min(int(groups)*8, n)
		}
		if groups <= uint64(len(b)) {
			span = min(int(groups)*w, len(b))
		}
		need := (vals*w + 7) / 8
		if len(b) < need {
			return errors.New("truncated bit-packed run")
		}
		packed := b[:need]
		b = b[span:]
		for i := 0; i < vals; i, n = i+1, n-1 {
			if err := f(unpack(packed, i, w), 1); err != nil {
				return err
			}
		}
	}
	return nil
}

// plainByteArrays reads n PLAIN BYTE_ARRAY values (a 4-byte little-endian
// length, then the bytes) from b: given to visit when set, else returned.
func plainByteArrays(b []byte, n int, visit func([]byte) error) ([][]byte, error) {
	if n < 0 || n > len(b)/4 && n > 0 {
		return nil, fmt.Errorf("%d byte arrays in %d bytes", n, len(b))
	}
	var out [][]byte
	if visit == nil {
		out = make([][]byte, 0, n)
	}
	for range n {
		if len(b) < 4 {
			return nil, errors.New("truncated byte array length")
		}
		l := binary.LittleEndian.Uint32(b)
		if uint64(l) > uint64(len(b)-4) {
			return nil, fmt.Errorf("byte array of %d bytes, %d left", l, len(b)-4)
		}
		v := b[4 : 4+l : 4+l]
		b = b[4+l:]
		if visit == nil {
			out = append(out, v)
		} else if err := visit(v); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// dictValues visits n dictionary-encoded values.
func dictValues(b []byte, n int, dict [][]byte, visit func([]byte) error) error {
	return dictIndices(b, n, len(dict), func(i uint64, k int) error {
		for range k {
			if err := visit(dict[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// dictIndices decodes n dictionary indices (a bit-width byte, then the
// RLE hybrid), each below size, giving f each run of k equal ones.
func dictIndices(b []byte, n, size int, f func(i uint64, k int) error) error {
	if n == 0 {
		return nil
	}
	if len(b) == 0 {
		return errors.New("dictionary indices without a bit width")
	}
	return rleHybrid(b[1:], int(b[0]), n, func(v uint64, k int) error {
		if v >= uint64(size) {
			return fmt.Errorf("dictionary index %d of %d entries", v, size)
		}
		return f(v, k)
	})
}

// decompress returns src decompressed by codec, which must give exactly n
// bytes (n within the decode limits: checkPage); no codec is let write
// more than n+1 bytes, whatever src claims.
func decompress(codec int32, src []byte, n int32) ([]byte, error) {
	if n < 0 {
		return nil, fmt.Errorf("page of %d bytes", n)
	}
	var out []byte
	switch codec {
	case 0: // UNCOMPRESSED
		out = src
	case 1: // SNAPPY: the decoded length leads the block
		l, err := snappy.DecodedLen(src)
		if err != nil {
			return nil, err
		}
		if l != int(n) {
			return nil, fmt.Errorf("snappy page decompresses to %d bytes, header says %d", l, n)
		}
		if out, err = snappy.Decode(nil, src); err != nil {
			return nil, err
		}
	case 2: // GZIP
		z, err := gzip.NewReader(bytes.NewReader(src))
		if err != nil {
			return nil, err
		}
		defer func() { _ = z.Close() }() // ReadAll reports a bad stream
		if out, err = io.ReadAll(io.LimitReader(z, int64(n)+1)); err != nil {
			return nil, err
		}
	case 6: // ZSTD
		z, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(2*maxDecodePage), zstd.WithDecoderMaxWindow(maxDecodePage))
		if err != nil {
			return nil, err
		}
		defer z.Close()
		if out, err = z.DecodeAll(src, make([]byte, 0, n)); err != nil {
			return nil, err
		}
	case 4, 5, 7: // BROTLI, LZ4 (Hadoop-framed or bare), LZ4_RAW: codecs.go
		var err error
		if out, err = decompressMore(codec, src, n); err != nil {
			return nil, err
		}
	case 3: // LZO
		// Neither reference reader (parquet-go, Arrow) decodes LZO pages,
		// none of our modules does, and the framing parquet-mr's
		// hadoop-lzo codec wrote has no written spec to test against.
		return nil, fmt.Errorf("%w: codec LZO (parquet-go and Arrow do not read it either; no pure-Go decoder among our modules)", errNotDecoded)
	default:
		return nil, fmt.Errorf("%w: codec %s", errNotDecoded, codecName(codec))
	}
	if len(out) != int(n) {
		return nil, fmt.Errorf("page decompresses to %d bytes, header says %d", len(out), n)
	}
	return out, nil
}
