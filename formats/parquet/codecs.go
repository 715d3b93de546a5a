package parquet

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/andybalholm/brotli"
	"github.com/pierrec/lz4/v4"
)

// decompressMore decodes the codecs decompress leaves to this file:
// BROTLI (4), LZ4 (5) and LZ4_RAW (7). Like decompress, no codec writes
// more than n+1 bytes, whatever src claims; the caller checks the length.
func decompressMore(codec int32, src []byte, n int32) ([]byte, error) {
	switch codec {
	case 4: // BROTLI: a stream; its window is at most 16 MiB (no large windows)
		out, err := io.ReadAll(io.LimitReader(brotli.NewReader(bytes.NewReader(src)), int64(n)+1))
		if err != nil {
			return nil, fmt.Errorf("brotli page: %w", err)
		}
		return out, nil
	case 5: // LZ4: Hadoop's framing, else a bare block, as Arrow reads it
		if out, err := lz4Hadoop(src, int(n)); err == nil {
			return out, nil
		}
		return lz4Block(src, int(n))
	case 7: // LZ4_RAW: one bare LZ4 block
		return lz4Block(src, int(n))
	}
	return nil, fmt.Errorf("%w: codec %s", errNotDecoded, codecName(codec))
}

// lz4Block decodes one LZ4 block that must give exactly n bytes.
func lz4Block(src []byte, n int) ([]byte, error) {
	out := make([]byte, n)
	got, err := lz4.UncompressBlock(src, out)
	if err != nil {
		return nil, fmt.Errorf("lz4 page: %w", err)
	}
	if got != n {
		return nil, fmt.Errorf("lz4 page decompresses to %d bytes, header says %d", got, n)
	}
	return out, nil
}

// lz4Hadoop decodes the framing of Hadoop's Lz4Codec (parquet-mr's old LZ4):
// blocks, each led by its big-endian decompressed and compressed sizes,
// that must fill exactly n bytes.
func lz4Hadoop(src []byte, n int) ([]byte, error) {
	out := make([]byte, n)
	pos := 0
	for len(src) > 0 {
		if len(src) < 8 {
			return nil, errors.New("lz4 hadoop frame: truncated block header")
		}
		dlen := uint64(binary.BigEndian.Uint32(src))
		clen := uint64(binary.BigEndian.Uint32(src[4:]))
		src = src[8:]
		if clen > uint64(len(src)) || dlen > uint64(n-pos) {
			return nil, errors.New("lz4 hadoop frame: block sizes do not fit")
		}
		got, err := lz4.UncompressBlock(src[:clen], out[pos:pos+int(dlen)])
		if err != nil || uint64(got) != dlen {
			return nil, errors.New("lz4 hadoop frame: block does not decode to its size")
		}
		pos += got
		src = src[clen:]
	}
	if pos != n {
		return nil, fmt.Errorf("lz4 hadoop frame decodes to %d bytes, header says %d", pos, n)
	}
	return out, nil
}
