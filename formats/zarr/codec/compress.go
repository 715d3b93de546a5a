package codec

import (
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// readAll reads r to its end, refusing more than limit bytes.
func readAll(name string, r io.Reader, limit int) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, corruptf("%s: %v", name, err)
	}
	if len(b) > limit {
		return nil, corruptf("%s: decodes to more than %d bytes", name, limit)
	}
	return b, nil
}

// inflate decodes a zlib (RFC 1950) stream.
func inflate(src []byte, limit int) ([]byte, error) {
	r, err := zlib.NewReader(bytes.NewReader(src))
	if err != nil {
		return nil, corruptf("zlib: %v", err)
	}
	defer r.Close()
	return readAll("zlib", r, limit)
}

// gunzip decodes a gzip (RFC 1952) stream.
func gunzip(src []byte, limit int) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(src))
	if err != nil {
		return nil, corruptf("gzip: %v", err)
	}
	b, err := readAll("gzip", r, limit)
	if cerr := r.Close(); err == nil && cerr != nil {
		return nil, corruptf("gzip: %v", cerr)
	}
	return b, err
}

// bunzip decodes a bzip2 stream.
func bunzip(src []byte, limit int) ([]byte, error) {
	return readAll("bz2", bzip2.NewReader(bytes.NewReader(src)), limit)
}

// unzstd decodes one or more zstd frames. The decoder's memory is bounded
// by limit too, but never below 1 MiB: the library counts a small frame's
// window as at least 1 KiB, and writers may declare windows larger than
// their content.
func unzstd(src []byte, limit int) ([]byte, error) {
	d, err := newZstd(limit)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return zstdWith(d, src, limit)
}

// newZstd is a decoder whose memory is bounded by limit (see unzstd).
func newZstd(limit int) (*zstd.Decoder, error) {
	bound := uint64(max(limit, 1<<20))
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxMemory(bound), zstd.WithDecoderMaxWindow(bound))
	if err != nil {
		return nil, fmt.Errorf("zstd: %w", err)
	}
	return d, nil
}

// zstdWith decodes src with d, refusing more than limit bytes.
func zstdWith(d *zstd.Decoder, src []byte, limit int) ([]byte, error) {
	out, err := d.DecodeAll(src, nil)
	if err != nil {
		return nil, corruptf("zstd: %v", err)
	}
	if len(out) > limit {
		return nil, corruptf("zstd: decodes to more than %d bytes", limit)
	}
	return out, nil
}

// unlz4 decodes numcodecs' LZ4: a 4-byte little-endian decoded size, then
// one LZ4 block.
func unlz4(src []byte, limit int) ([]byte, error) {
	if len(src) < 4 {
		return nil, corruptf("lz4: %d bytes, no size header", len(src))
	}
	n := binary.LittleEndian.Uint32(src)
	if uint64(n) > uint64(limit) {
		return nil, corruptf("lz4: header claims %d bytes, more than %d", n, limit)
	}
	dst := make([]byte, n)
	if err := lz4Block(dst, src[4:]); err != nil {
		return nil, err
	}
	return dst, nil
}

// lz4Block decodes one raw LZ4 block into dst, which must come out full.
func lz4Block(dst, src []byte) error {
	if len(dst) == 0 {
		if len(src) == 1 && src[0] == 0 || len(src) == 0 {
			return nil
		}
		return corruptf("lz4: %d bytes for an empty block", len(src))
	}
	n, err := lz4.UncompressBlock(src, dst)
	if err != nil {
		return corruptf("lz4: %v", err)
	}
	if n != len(dst) {
		return corruptf("lz4: %d bytes decoded, want %d", n, len(dst))
	}
	return nil
}

// snappyBlock decodes one raw Snappy block into dst, which must come out
// full; the block's own length prefix is checked before anything is
// allocated.
func snappyBlock(dst, src []byte) error {
	if len(dst) == 0 {
		return corruptf("snappy: empty block")
	}
	n, err := snappy.DecodedLen(src)
	if err != nil {
		return corruptf("snappy: %v", err)
	}
	if n != len(dst) {
		return corruptf("snappy: block claims %d bytes, want %d", n, len(dst))
	}
	out, err := snappy.Decode(dst, src)
	if err != nil {
		return corruptf("snappy: %v", err)
	}
	if len(out) != len(dst) {
		return corruptf("snappy: %d bytes decoded, want %d", len(out), len(dst))
	}
	if &out[0] != &dst[0] {
		copy(dst, out)
	}
	return nil
}
