package tiff

import (
	"fmt"
	"math"
	"strings"

	"github.com/chunkvc/chunkvc/geom"
)

// image is one IFD understood as a raster: its block grid and where its
// keys and footprints come from.
type image struct {
	d              *ifd
	w, h           uint64
	tiled          bool
	bw, bh         uint64 // block size in pixels (strips: w × rows per strip)
	across, down   uint64 // blocks per row and per column
	planes         uint64 // 1, or SamplesPerPixel for PlanarConfiguration 2
	spp            uint64
	offsets        []uint64
	counts         []uint64
	reduced, mask  bool
	base           *image // the full-resolution image this one belongs to
	level          int
	prefix         string // key prefix, e.g. "z2/", "mask/z0/", "ifd3/z0/"
	g              geo
	hasGrid        bool // false for an IFD without image data
	compression    uint64
	predictor      uint64
	bits, sampleFm uint64
}

// readImage reads the raster structure of d. An IFD without strip or tile
// offsets is not an error: it simply has no blocks.
func (rd *reader) readImage(d *ifd) (*image, error) {
	im := &image{d: d}
	sub := rd.uint1(d, tagNewSubfileType, 0)
	if old := rd.uint1(d, tagSubfileType, 0); old == 2 {
		sub |= subfileReduced
	}
	im.reduced, im.mask = sub&subfileReduced != 0, sub&subfileMask != 0
	im.compression = rd.uint1(d, tagCompression, 1)
	im.predictor = rd.uint1(d, tagPredictor, 1)
	im.bits = rd.uint1(d, tagBitsPerSample, 1)
	im.sampleFm = rd.uint1(d, tagSampleFormat, 1)
	offTag, cntTag := uint16(tagStripOffsets), uint16(tagStripByteCounts)
	if d.find(tagTileOffsets) != nil || d.find(tagTileWidth) != nil {
		im.tiled, offTag, cntTag = true, tagTileOffsets, tagTileByteCounts
	}
	if d.find(offTag) == nil && d.find(cntTag) == nil {
		return im, nil
	}
	im.hasGrid = true
	im.w, im.h = rd.uint1(d, tagImageWidth, 0), rd.uint1(d, tagImageLength, 0)
	if im.w == 0 || im.h == 0 || im.w > maxDim || im.h > maxDim {
		return nil, fmt.Errorf("tiff: IFD %d: image size %dx%d", d.index, im.w, im.h)
	}
	im.spp = rd.uint1(d, tagSamplesPerPixel, 1)
	if im.spp == 0 || im.spp > math.MaxUint16 {
		return nil, fmt.Errorf("tiff: IFD %d: %d samples per pixel", d.index, im.spp)
	}
	im.planes = 1
	if rd.uint1(d, tagPlanarConfig, 1) == 2 {
		im.planes = im.spp
	}
	if im.tiled {
		im.bw, im.bh = rd.uint1(d, tagTileWidth, 0), rd.uint1(d, tagTileLength, 0)
		if im.bw == 0 || im.bh == 0 || im.bw > maxDim || im.bh > maxDim {
			return nil, fmt.Errorf("tiff: IFD %d: tile size %dx%d", d.index, im.bw, im.bh)
		}
	} else {
		im.bw, im.bh = im.w, rd.uint1(d, tagRowsPerStrip, defaultRowsPerStrip)
		if im.bh == 0 {
			return nil, fmt.Errorf("tiff: IFD %d: RowsPerStrip 0", d.index)
		}
		im.bh = min(im.bh, im.h)
	}
	im.across, im.down = (im.w+im.bw-1)/im.bw, (im.h+im.bh-1)/im.bh
	// w, h ≤ 2^31 so across·down ≤ 2^62; planes ≤ 2^16 needs the check.
	n := im.across * im.down
	if n > maxArray || n*im.planes > maxArray {
		return nil, fmt.Errorf("tiff: IFD %d: %d×%d×%d blocks", d.index, im.across, im.down, im.planes)
	}
	want := n * im.planes
	var err error
	if im.offsets, err = rd.uints(d, offTag); err != nil {
		return nil, err
	}
	if im.counts, err = rd.uints(d, cntTag); err != nil {
		return nil, err
	}
	if uint64(len(im.offsets)) != want || uint64(len(im.counts)) != want {
		return nil, fmt.Errorf("tiff: IFD %d: %d offsets and %d byte counts for %d blocks",
			d.index, len(im.offsets), len(im.counts), want)
	}
	return im, nil
}

// assignKeys decides each image's base, overview level and key prefix.
// The first IFD with image data is the base; a later IFD without the
// reduced or mask bit starts a new page ("ifd<i>/..."). Prefixes are
// unique: a clash (two overviews of one level) falls back to "ifd<i>/".
func assignKeys(rd *reader, ims []*image) {
	used := map[string]bool{}
	var first, base *image
	for i, im := range ims {
		if !im.hasGrid {
			continue
		}
		if base == nil || (!im.reduced && !im.mask) {
			base = im
			base.g = rd.readGeo(im.d)
			if first == nil {
				first = im
			}
		}
		im.base, im.g = base, base.g
		if im != base {
			im.level = int(math.Round(math.Log2(float64(base.w) / float64(im.w))))
		}
		p := ""
		if base != first {
			p = fmt.Sprintf("ifd%d/", base.d.index)
		}
		if im.mask {
			p += "mask/"
		}
		p += fmt.Sprintf("z%d/", im.level)
		if im.level < 0 || im.level > 40 || used[p] {
			p = fmt.Sprintf("ifd%d/", i)
		}
		used[p] = true
		im.prefix = p
	}
}

// block is one tile or strip of an image.
type block struct {
	off, n int64
	key    string
	bbox   *geom.BBox
}

// blocks lists im's non-sparse blocks. Offset 0 or byte count 0 means
// sparse (GDAL SPARSE_OK): no bytes, no chunk.
func (rd *reader) blocks(im *image, out []block) ([]block, error) {
	perPlane := im.across * im.down
	fx := float64(im.base.w) / float64(im.w)
	fy := float64(im.base.h) / float64(im.h)
	var sb strings.Builder
	for i := range im.offsets {
		off, n := im.offsets[i], im.counts[i]
		if off == 0 || n == 0 {
			continue
		}
		if off > uint64(rd.size) || n > uint64(rd.size)-off {
			return nil, fmt.Errorf("tiff: IFD %d block %d (%d+%d) runs past the end of the %d-byte file",
				im.d.index, i, off, n, rd.size)
		}
		idx := uint64(i)
		plane, rc := idx/perPlane, idx%perPlane
		r, c := rc/im.across, rc%im.across
		sb.Reset()
		sb.WriteString(im.prefix)
		if im.tiled {
			fmt.Fprintf(&sb, "r%d/c%d", r, c)
		} else {
			fmt.Fprintf(&sb, "s%d", r)
		}
		if im.planes > 1 {
			fmt.Fprintf(&sb, "/p%d", plane)
		}
		x0, y0 := float64(c*im.bw), float64(r*im.bh)
		x1, y1 := float64(min((c+1)*im.bw, im.w)), float64(min((r+1)*im.bh, im.h))
		out = append(out, block{off: int64(off), n: int64(n), key: sb.String(), bbox: im.g.bbox(x0, y0, x1, y1, fx, fy)})
	}
	return out, nil
}
