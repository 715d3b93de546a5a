package codec

import (
	"encoding/binary"
	"fmt"

	"github.com/klauspost/compress/zstd"
)

// Blosc (version 1 format) chunk layout, all integers little endian:
//
//	0      version     format version (1 or 2; Blosc2 writes 3 and up)
//	1      versionlz   version of the internal codec's format
//	2      flags       bit 0 byte shuffle, bit 1 memcpyed, bit 2 bit
//	                   shuffle, bit 4 "blocks not split", bits 5-7 codec
//	                   (0 blosclz, 1 lz4/lz4hc, 2 snappy, 3 zlib, 4 zstd)
//	3      typesize    element width the shuffles work with
//	4..8   nbytes      decoded size
//	8..12  blocksize   decoded size of every block but a shorter last one
//	12..16 cbytes      encoded size, header included
//
// A memcpyed chunk holds the nbytes raw after the header. Otherwise an
// array of int32 offsets, one per block, follows, and each block is one
// stream, or typesize streams (one per byte plane) when it is split; each
// stream is an int32 length and that many bytes, stored raw when the
// length equals the stream's decoded size. A block is unshuffled after
// its streams are decoded.
const (
	bloscHeaderLen  = 16
	bloscShuffle    = 0x1
	bloscMemcpyed   = 0x2
	bloscBitShuffle = 0x4
	bloscDelta      = 0x8 // Blosc2 only
	bloscNoSplit    = 0x10
	bloscMaxSplits  = 16
	bloscMinBuffer  = 128
)

// BloscHeader is the 16-byte header of a Blosc chunk.
type BloscHeader struct {
	Version, VersionLZ, Flags, TypeSize uint8
	NBytes, BlockSize, CBytes           int
}

// bloscCodecs names the internal codecs by their flag value.
var bloscCodecs = [...]string{"blosclz", "lz4", "snappy", "zlib", "zstd"}

// Codec names the internal codec the flags give ("lz4" covers lz4hc).
func (h BloscHeader) Codec() string {
	if c := int(h.Flags >> 5); c < len(bloscCodecs) {
		return bloscCodecs[c]
	}
	return fmt.Sprintf("code %d", h.Flags>>5)
}

// ParseBloscHeader reads and checks a Blosc header: a version this
// package reads, sizes within MaxDecoded and an encoded size that fits.
func ParseBloscHeader(b []byte) (BloscHeader, error) {
	if len(b) < bloscHeaderLen {
		return BloscHeader{}, corruptf("blosc: %d bytes, shorter than the header", len(b))
	}
	h := BloscHeader{
		Version: b[0], VersionLZ: b[1], Flags: b[2], TypeSize: b[3],
		NBytes:    int(binary.LittleEndian.Uint32(b[4:])),
		BlockSize: int(binary.LittleEndian.Uint32(b[8:])),
		CBytes:    int(binary.LittleEndian.Uint32(b[12:])),
	}
	switch {
	case h.Version == 0:
		return h, corruptf("blosc: format version 0")
	case h.Version > 2:
		return h, unsupported("blosc format", fmt.Sprintf("version %d (Blosc2)", h.Version))
	case h.Flags&bloscDelta != 0:
		return h, unsupported("blosc filter", "delta")
	case h.Flags&bloscShuffle != 0 && h.Flags&bloscBitShuffle != 0:
		return h, corruptf("blosc: both shuffles flagged")
	case h.TypeSize == 0:
		return h, corruptf("blosc: typesize 0")
	case h.NBytes > MaxDecoded || h.BlockSize > MaxDecoded:
		return h, corruptf("blosc: %d bytes in blocks of %d, over the %d cap", h.NBytes, h.BlockSize, MaxDecoded)
	case h.CBytes < bloscHeaderLen || h.CBytes > len(b):
		return h, corruptf("blosc: header gives %d encoded bytes, the chunk has %d", h.CBytes, len(b))
	case h.NBytes > 0 && h.BlockSize == 0:
		return h, corruptf("blosc: block size 0")
	}
	if int(h.Flags>>5) >= len(bloscCodecs) && h.Flags&bloscMemcpyed == 0 {
		return h, unsupported("blosc codec", h.Codec())
	}
	return h, nil
}

// DecodeBlosc decodes a Blosc chunk, refusing one whose header claims
// more than limit (at most MaxDecoded) decoded bytes.
func DecodeBlosc(src []byte, limit int) ([]byte, error) {
	h, err := ParseBloscHeader(src)
	if err != nil {
		return nil, err
	}
	if h.NBytes > min(limit, MaxDecoded) {
		return nil, corruptf("blosc: header claims %d bytes, more than %d", h.NBytes, limit)
	}
	src = src[:h.CBytes]
	if h.Flags&bloscMemcpyed != 0 {
		if h.CBytes != bloscHeaderLen+h.NBytes {
			return nil, corruptf("blosc: memcpyed chunk of %d bytes holds %d", h.CBytes, h.NBytes)
		}
		return append([]byte(nil), src[bloscHeaderLen:]...), nil
	}
	dst := make([]byte, h.NBytes)
	if h.NBytes == 0 {
		return dst, nil
	}
	nblocks := (h.NBytes + h.BlockSize - 1) / h.BlockSize
	first := bloscHeaderLen + 4*nblocks
	if first > h.CBytes {
		return nil, corruptf("blosc: %d block offsets do not fit in %d bytes", nblocks, h.CBytes)
	}
	d := &bloscDecoder{h: h, src: src, tmp: make([]byte, min(h.BlockSize, h.NBytes))}
	defer d.close()
	for j := 0; j < nblocks; j++ {
		start := int(binary.LittleEndian.Uint32(src[bloscHeaderLen+4*j:]))
		if start < first || start >= h.CBytes {
			return nil, corruptf("blosc: block %d starts at %d, outside %d..%d", j, start, first, h.CBytes)
		}
		lo := j * h.BlockSize
		hi := min(lo+h.BlockSize, h.NBytes)
		if err := d.block(dst[lo:hi], start, hi-lo < h.BlockSize); err != nil {
			return nil, fmt.Errorf("blosc block %d: %w", j, err)
		}
	}
	return dst, nil
}

// bloscDecoder holds what the blocks of one chunk share.
type bloscDecoder struct {
	h   BloscHeader
	src []byte
	tmp []byte // one block before unshuffling
	zd  *zstd.Decoder
}

func (d *bloscDecoder) close() {
	if d.zd != nil {
		d.zd.Close()
	}
}

// block decodes the block at offset start into dst.
func (d *bloscDecoder) block(dst []byte, start int, leftover bool) error {
	ts := int(d.h.TypeSize)
	bsize := len(dst)
	shuffle := d.h.Flags&bloscShuffle != 0 && ts > 1
	bitshuffle := d.h.Flags&bloscBitShuffle != 0 && bsize >= ts
	out := dst
	if shuffle || bitshuffle {
		out = d.tmp[:bsize]
	}
	// Split blocks are one stream per byte plane; the size test is how
	// chunks from before the "not split" flag existed are read too.
	nsplits := 1
	if d.h.Flags&bloscNoSplit == 0 && ts <= bloscMaxSplits && bsize/ts >= bloscMinBuffer && !leftover {
		nsplits = ts
	}
	if bsize%nsplits != 0 {
		return corruptf("block of %d bytes in %d streams", bsize, nsplits)
	}
	neblock := bsize / nsplits
	off := start
	for s := 0; s < nsplits; s++ {
		if off+4 > len(d.src) {
			return corruptf("stream %d: length past the end", s)
		}
		n := int(int32(binary.LittleEndian.Uint32(d.src[off:])))
		off += 4
		if n < 0 || n > len(d.src)-off {
			return corruptf("stream %d: length %d past the end", s, n)
		}
		part := out[s*neblock : (s+1)*neblock]
		if err := d.stream(part, d.src[off:off+n]); err != nil {
			return fmt.Errorf("stream %d: %w", s, err)
		}
		off += n
	}
	switch {
	case shuffle:
		unshuffle(dst, out, ts)
	case bitshuffle:
		bitunshuffle(dst, out, ts)
	}
	return nil
}

// stream decodes one stream into dst, which it must fill exactly.
func (d *bloscDecoder) stream(dst, src []byte) error {
	if len(src) == len(dst) {
		copy(dst, src)
		return nil
	}
	switch d.h.Flags >> 5 {
	case 0:
		return blosclzDecode(dst, src)
	case 1:
		return lz4Block(dst, src)
	case 2:
		return snappyBlock(dst, src)
	case 3:
		b, err := inflate(src, len(dst))
		return fill(dst, b, err)
	default:
		if d.zd == nil { // one decoder for all the chunk's streams
			zd, err := newZstd(len(d.tmp))
			if err != nil {
				return err
			}
			d.zd = zd
		}
		b, err := zstdWith(d.zd, src, len(dst))
		return fill(dst, b, err)
	}
}

// fill copies a decoded stream into dst, which it must fill exactly.
func fill(dst, b []byte, err error) error {
	if err != nil {
		return err
	}
	if len(b) != len(dst) {
		return corruptf("%d bytes decoded, want %d", len(b), len(dst))
	}
	copy(dst, b)
	return nil
}
