package tiff

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"
	"golang.org/x/image/tiff/lzw"
)

// ErrUnsupported is wrapped by Raster.Block's error for blocks this
// package cannot decode (a codec, bit depth or sample format it does not
// know); the caller may hand the file to GDAL instead.
var ErrUnsupported = errors.New("unsupported")

// UnsupportedError names what could not be decoded ("codec jpeg").
type UnsupportedError struct{ What string }

func (e *UnsupportedError) Error() string { return "unsupported " + e.What }

// Is makes errors.Is(err, ErrUnsupported) true.
func (e *UnsupportedError) Is(target error) bool { return target == ErrUnsupported }

// Raster is a TIFF opened for decoding its blocks by chunk key. It reads
// the directory when opened and then only the blocks asked for, so a
// caller holding a random-access view of a stored file pays for the
// blocks it decodes, not for the file.
type Raster struct {
	rd  *reader
	ims map[string]*image // by key prefix ("z0/", "ifd3/z0/", …)
}

// Block is one decoded tile or strip: W×H pixels of len(Bands) samples,
// Bands[b][y*W+x], every sample type widened to float64. A tile at the
// right or bottom edge keeps its padding (W, H are the tile size); Valid
// is the part inside the image.
type Block struct {
	W, H         int
	ValidW       int
	ValidH       int
	Bands        [][]float64
	Codec, DType string
}

// maxDecode bounds the samples one Block holds (a tile, a strip, or an
// Overview): 2^24 float64s are 128 MiB, and a hostile or odd file must
// not make a diff allocate more.
const maxDecode = 1 << 24

// OpenRaster reads the directory of the TIFF in r.
func OpenRaster(ctx context.Context, r io.ReaderAt, size int64) (*Raster, error) {
	rd, err := newReader(r, size)
	if err != nil {
		return nil, err
	}
	ims, err := rd.images(ctx)
	if err != nil {
		return nil, err
	}
	ra := &Raster{rd: rd, ims: map[string]*image{}}
	for _, im := range ims {
		if im.hasGrid {
			ra.ims[im.prefix] = im
		}
	}
	return ra, nil
}

// NoData returns the GDAL nodata value of the full-resolution image.
func (ra *Raster) NoData() (float64, bool) {
	im := ra.ims["z0/"]
	if im == nil {
		return 0, false
	}
	e := im.d.find(tagGDALNoData)
	if e == nil || e.count == 0 || e.count > 64 {
		return 0, false
	}
	b, err := ra.rd.read(e.off, int64(e.count))
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimRight(string(b), "\x00")), 64)
	return v, err == nil
}

// BlockKey is the key of the block a chunk key belongs to: without its
// plane ("/p1") and content-cut part ("@…"); ok is false for gaps and
// keys this adapter does not write.
func BlockKey(chunk string) (key string, k Key, ok bool) {
	k, ok = ParseKey(chunk)
	if !ok || k.Gap {
		return "", k, false
	}
	k.Plane, k.Cut, k.Part = -1, false, ""
	return k.String(), k, true
}

// Block decodes the block named by key (a BlockKey: every plane of a
// PlanarConfiguration 2 image is read). A sparse block (no bytes) is
// returned filled with fill. Errors wrap ErrUnsupported for what this
// package cannot decode.
func (ra *Raster) Block(key string, fill float64) (*Block, error) {
	k, ok := ParseKey(key)
	if !ok || k.Gap || k.Plane >= 0 || k.Cut {
		return nil, fmt.Errorf("tiff: %q is not a block key", key)
	}
	im := ra.ims[k.prefix()]
	if im == nil {
		return nil, fmt.Errorf("tiff: block %s: no such image", key)
	}
	if uint64(k.Row) >= im.down || (im.tiled && uint64(k.Col) >= im.across) || (!im.tiled && k.Col != 0) || im.tiled != k.Tiled {
		return nil, fmt.Errorf("tiff: block %s: outside the %d×%d grid", key, im.across, im.down)
	}
	f, err := im.sampleFormat()
	if err != nil {
		return nil, fmt.Errorf("tiff: block %s: %w", key, err)
	}
	if im.bw*im.bh*im.spp > maxDecode {
		return nil, &UnsupportedError{fmt.Sprintf("block size %dx%d×%d", im.bw, im.bh, im.spp)}
	}
	bl := &Block{W: int(im.bw), H: int(im.bh), Codec: compressionName(im.compression), DType: dtype(im.bits, im.sampleFm)}
	if !im.tiled {
		bl.H = int(min(im.bh, im.h-uint64(k.Row)*im.bh))
	}
	bl.ValidW = int(min(uint64(bl.W), im.w-uint64(k.Col)*im.bw))
	bl.ValidH = int(min(uint64(bl.H), im.h-uint64(k.Row)*im.bh))
	bl.Bands = make([][]float64, im.spp)
	for b := range bl.Bands {
		bl.Bands[b] = make([]float64, bl.W*bl.H)
	}
	perPlane := im.spp / im.planes // samples per pixel in one block
	for p := uint64(0); p < im.planes; p++ {
		i := p*im.across*im.down + uint64(k.Row)*im.across + uint64(k.Col)
		vals, err := ra.decodePlane(im, i, bl.W*bl.H*int(perPlane), f)
		if err != nil {
			return nil, fmt.Errorf("tiff: block %s: %w", key, err)
		}
		for s := uint64(0); s < perPlane; s++ {
			band := bl.Bands[p+s]
			if vals == nil {
				for j := range band {
					band[j] = fill
				}
				continue
			}
			for j := range band {
				band[j] = vals[uint64(j)*perPlane+s]
			}
		}
	}
	return bl, nil
}

// prefix is the image part of k as assignKeys spells it.
func (k Key) prefix() string {
	var b strings.Builder
	if k.IFD >= 0 {
		fmt.Fprintf(&b, "ifd%d/", k.IFD)
	}
	if k.Mask {
		b.WriteString("mask/")
	}
	if k.Level >= 0 {
		fmt.Fprintf(&b, "z%d/", k.Level)
	}
	return b.String()
}

// sampleKind is how samples are stored: bytes per sample and format.
type sampleKind struct {
	size  int
	float bool
	sign  bool
}

func (im *image) sampleFormat() (sampleKind, error) {
	k := sampleKind{size: int(im.bits / 8), sign: im.sampleFm == 2, float: im.sampleFm == 3}
	ok := im.bits%8 == 0 && (k.size == 1 || k.size == 2 || k.size == 4 || k.size == 8)
	ok = ok && (im.sampleFm == 1 || im.sampleFm == 2 || im.sampleFm == 3) && (!k.float || k.size >= 4)
	if !ok {
		return k, &UnsupportedError{"sample type " + dtype(im.bits, im.sampleFm)}
	}
	return k, nil
}

// decodePlane reads block i of im and returns its n samples, or nil for a
// sparse block.
func (ra *Raster) decodePlane(im *image, i uint64, n int, f sampleKind) ([]float64, error) {
	off, cnt := im.offsets[i], im.counts[i]
	if off == 0 || cnt == 0 {
		return nil, nil
	}
	raw, err := ra.rd.read(int64(off), int64(cnt))
	if err != nil {
		return nil, err
	}
	want := n * f.size
	data, err := decompress(im.compression, raw, want)
	if err != nil {
		return nil, err
	}
	if len(data) < want {
		return nil, fmt.Errorf("%d bytes decoded, want %d", len(data), want)
	}
	data = data[:want]
	little := ra.rd.bo == binary.LittleEndian
	rowLen := int(im.bw) * int(im.spp/im.planes) // samples in one row
	switch im.predictor {
	case 1:
	case 2:
		horizontal(data, little, f.size, rowLen, int(im.spp/im.planes))
	case 3:
		if !f.float {
			return nil, &UnsupportedError{"predictor 3 on " + dtype(im.bits, im.sampleFm)}
		}
		data = floatingPoint(data, f.size, rowLen, int(im.spp/im.planes))
	default:
		return nil, &UnsupportedError{fmt.Sprintf("predictor %d", im.predictor)}
	}
	return widen(data, f, n, little), nil
}

// decompress returns the decoded bytes of one block (at most want bytes
// are kept of an over-long stream).
func decompress(code uint64, raw []byte, want int) ([]byte, error) {
	var r io.Reader
	switch code {
	case 1:
		return raw, nil
	case 5:
		lr := lzw.NewReader(bytes.NewReader(raw), lzw.MSB, 8)
		defer lr.Close()
		r = lr
	case 8, 32946:
		zr, err := zlib.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("deflate: %w", err)
		}
		defer zr.Close()
		r = zr
	case 50000:
		zr, err := zstd.NewReader(bytes.NewReader(raw), zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		defer zr.Close()
		r = zr
	case 32773:
		return packBits(raw, want)
	default:
		return nil, &UnsupportedError{"codec " + compressionName(code)}
	}
	out := make([]byte, want)
	n, err := io.ReadFull(r, out)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("%s: %w", compressionName(code), err)
	}
	return out[:n], nil
}

// packBits decodes Apple PackBits (TIFF compression 32773).
func packBits(src []byte, want int) ([]byte, error) {
	out := make([]byte, 0, want)
	for len(src) > 0 && len(out) < want {
		n := int(int8(src[0]))
		src = src[1:]
		switch {
		case n >= 0:
			if len(src) < n+1 {
				return nil, errors.New("packbits: literal run past the end")
			}
			out, src = append(out, src[:n+1]...), src[n+1:]
		case n != -128:
			if len(src) < 1 {
				return nil, errors.New("packbits: repeat past the end")
			}
			for range 1 - n {
				out = append(out, src[0])
			}
			src = src[1:]
		}
	}
	return out, nil
}

// horizontal undoes predictor 2 in place: each sample is the sum of the
// stored difference and the same sample of the pixel to its left, modulo
// its width, in the file's byte order.
func horizontal(data []byte, little bool, size, rowLen, spp int) {
	get, put := sampleIO(size, little)
	for row := 0; row+rowLen*size <= len(data); row += rowLen * size {
		for i := spp; i < rowLen; i++ {
			at := row + i*size
			put(data[at:], get(data[at:])+get(data[at-spp*size:]))
		}
	}
}

// sampleIO reads and writes unsigned integers of size bytes.
func sampleIO(size int, little bool) (func([]byte) uint64, func([]byte, uint64)) {
	get := func(b []byte) uint64 {
		var v uint64
		for i := range size {
			j := i
			if !little {
				j = size - 1 - i
			}
			v |= uint64(b[j]) << (8 * i)
		}
		return v
	}
	put := func(b []byte, v uint64) {
		for i := range size {
			j := i
			if !little {
				j = size - 1 - i
			}
			b[j] = byte(v >> (8 * i))
		}
	}
	return get, put
}

// floatingPoint undoes predictor 3 (Adobe's floating-point predictor):
// each row holds byte-wise differences of its samples' bytes, most
// significant byte plane first (see below for big-endian files). It
// returns the samples in the file's byte order.
func floatingPoint(data []byte, size, rowLen, spp int) []byte {
	out := make([]byte, len(data))
	rowBytes := rowLen * size
	for row := 0; row+rowBytes <= len(data); row += rowBytes {
		r := data[row : row+rowBytes]
		for i := spp; i < rowBytes; i++ {
			r[i] += r[i-spp]
		}
		// Byte plane b lands at byte size-1-b of each sample in the
		// file's order, whichever that is: plane 0 is the most
		// significant byte of a little-endian file, and libtiff writes
		// a big-endian one's planes in that same order (checked against
		// GDAL in TestDecodeGDAL).
		for s := range rowLen {
			for b := range size {
				out[row+s*size+size-1-b] = r[b*rowLen+s]
			}
		}
	}
	return out
}

// widen converts n samples of kind f in data to float64.
func widen(data []byte, f sampleKind, n int, little bool) []float64 {
	get, _ := sampleIO(f.size, little)
	out := make([]float64, n)
	for i := range out {
		u := get(data[i*f.size:])
		switch {
		case f.float && f.size == 4:
			out[i] = float64(math.Float32frombits(uint32(u)))
		case f.float:
			out[i] = math.Float64frombits(u)
		case f.sign:
			shift := 64 - 8*f.size
			out[i] = float64(int64(u<<shift) >> shift)
		default:
			out[i] = float64(u)
		}
	}
	return out
}

// Overview decodes a whole image of the full-resolution pyramid ("z0/"
// and its overviews) into one Block: the coarsest level whose longer
// side is still at least minSide pixels, or full resolution when none is.
// It is what a preview needs, and with COG overviews it reads a few
// small tiles rather than the raster.
func (ra *Raster) Overview(minSide int, fill float64) (*Block, int, error) {
	pick, err := ra.previewImage(minSide)
	if err != nil {
		return nil, 0, err
	}
	out := &Block{W: int(pick.w), H: int(pick.h), ValidW: int(pick.w), ValidH: int(pick.h),
		Bands: make([][]float64, pick.spp), Codec: compressionName(pick.compression), DType: dtype(pick.bits, pick.sampleFm)}
	for b := range out.Bands {
		out.Bands[b] = make([]float64, out.W*out.H)
	}
	for r := uint64(0); r < pick.down; r++ {
		for c := uint64(0); c < pick.across; c++ {
			k := Key{IFD: -1, Level: pick.level, Tiled: pick.tiled, Row: int(r), Col: int(c), Plane: -1}
			bl, err := ra.Block(k.String(), fill)
			if err != nil {
				return nil, 0, err
			}
			x0, y0 := int(c*pick.bw), int(r*pick.bh)
			for b, band := range bl.Bands {
				for y := range bl.ValidH {
					copy(out.Bands[b][(y0+y)*out.W+x0:(y0+y)*out.W+x0+bl.ValidW], band[y*bl.W:y*bl.W+bl.ValidW])
				}
			}
		}
	}
	return out, pick.level, nil
}

// OverviewWindow is the whole image Overview(minSide) decodes, as a
// Window, for a reader other than Block (GDAL) to fetch when its codec is
// one this package cannot decode.
func (ra *Raster) OverviewWindow(minSide int) (Window, error) {
	pick, err := ra.previewImage(minSide)
	if err != nil {
		return Window{}, err
	}
	return Window{ImageW: int(pick.w), ImageH: int(pick.h), W: int(pick.w), H: int(pick.h)}, nil
}

// previewImage picks Overview's image; one too large to decode whole is
// an *UnsupportedError.
func (ra *Raster) previewImage(minSide int) (*image, error) {
	var pick *image
	for _, im := range ra.ims {
		if im.prefix != fmt.Sprintf("z%d/", im.level) {
			continue
		}
		if max(im.w, im.h) < uint64(minSide) && im.level > 0 {
			continue
		}
		if pick == nil || im.w*im.h < pick.w*pick.h {
			pick = im
		}
	}
	if pick == nil {
		return nil, errors.New("tiff: no full-resolution image")
	}
	if pick.w*pick.h*pick.spp > maxDecode {
		return nil, &UnsupportedError{fmt.Sprintf("preview of a %dx%d×%d image without a smaller overview", pick.w, pick.h, pick.spp)}
	}
	return pick, nil
}

// Window is where a block lies in its image, for a reader other than
// Block (GDAL) to fetch the same pixels: the image's size and the block's
// valid pixels in it.
type Window struct {
	ImageW, ImageH int
	X0, Y0, W, H   int
}

// BlockWindow returns the window of block key (a BlockKey).
func (ra *Raster) BlockWindow(key string) (Window, error) {
	k, ok := ParseKey(key)
	if !ok || k.Gap || k.Plane >= 0 || k.Cut {
		return Window{}, fmt.Errorf("tiff: %q is not a block key", key)
	}
	im := ra.ims[k.prefix()]
	if im == nil || uint64(k.Row) >= im.down || uint64(k.Col) >= im.across {
		return Window{}, fmt.Errorf("tiff: block %s: no such block", key)
	}
	x0, y0 := uint64(k.Col)*im.bw, uint64(k.Row)*im.bh
	return Window{ImageW: int(im.w), ImageH: int(im.h), X0: int(x0), Y0: int(y0),
		W: int(min(im.bw, im.w-x0)), H: int(min(im.bh, im.h-y0))}, nil
}
