//go:build gdal

package gdal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"unsafe"

	"github.com/airbusgeo/godal"
)

// ErrGridMismatch means two rasters do not share a tile grid (size, bands,
// data type or tile size differ), so their tiles cannot be compared.
var ErrGridMismatch = errors.New("rasters are not on the same tile grid")

// Tile names a full-resolution tile by row and column.
type Tile struct{ Row, Col int }

// String is the tile's chunk key in the tiff adapter, e.g. "z0/r3/c7".
func (t Tile) String() string { return "z0/r" + strconv.Itoa(t.Row) + "/c" + strconv.Itoa(t.Col) }

// Churn compares the full-resolution tiles of two rasters on one grid.
// Every tile is counted once: Same, or in Changed, or in Churned.
type Churn struct {
	Grid  Grid
	Tiles int // full-resolution tiles compared
	// Same tiles have identical pixels and identical stored bytes.
	Same int
	// Changed tiles have different pixels (whatever their bytes).
	Changed []Tile
	// Churned tiles have identical pixels but different stored bytes:
	// re-encoding noise that would cost a new chunk for nothing.
	Churned []Tile
}

// TileChurn compares the full-resolution tiles of the rasters at oldPath
// and newPath, which must share a tile grid (else ErrGridMismatch). Pixels
// are decoded band by band over each tile's window; stored bytes are the
// tile's byte range as GDAL reports it (BLOCK_OFFSET/BLOCK_SIZE in the
// "TIFF" metadata domain; a sparse tile has none). A tile of a
// band-interleaved file is all its bands' blocks; mask bands are not
// compared. Rows and columns are visited in order, so Changed and Churned
// are sorted.
func TileChurn(oldPath, newPath string) (Churn, error) {
	a, err := openTiles(oldPath)
	if err != nil {
		return Churn{}, err
	}
	defer a.close()
	b, err := openTiles(newPath)
	if err != nil {
		return Churn{}, err
	}
	defer b.close()
	if a.grid != b.grid {
		return Churn{}, fmt.Errorf("%w: %s is %s; %s is %s", ErrGridMismatch, oldPath, a.grid, newPath, b.grid)
	}
	g := a.grid
	dt := a.ds.Structure().DataType
	n := g.TileWidth * g.TileHeight
	bufA, viewA, err := pixelBuffer(dt, n)
	if err != nil {
		return Churn{}, fmt.Errorf("%s: %w", oldPath, err)
	}
	bufB, viewB, _ := pixelBuffer(dt, n)
	c := Churn{Grid: g, Tiles: g.Tiles()}
	bandsA, bandsB := a.ds.Bands(), b.ds.Bands()
	for row := 0; row < g.Down(); row++ {
		for col := 0; col < g.Across(); col++ {
			x, y := col*g.TileWidth, row*g.TileHeight
			w, h := min(g.TileWidth, g.Width-x), min(g.TileHeight, g.Height-y)
			size := w * h * len(viewA) / n
			samePixels := true
			for i := range bandsA {
				if err := bandsA[i].Read(x, y, bufA, w, h); err != nil {
					return Churn{}, fmt.Errorf("read %s tile r%d c%d band %d: %w", oldPath, row, col, i+1, err)
				}
				if err := bandsB[i].Read(x, y, bufB, w, h); err != nil {
					return Churn{}, fmt.Errorf("read %s tile r%d c%d band %d: %w", newPath, row, col, i+1, err)
				}
				if !bytes.Equal(viewA[:size], viewB[:size]) {
					samePixels = false
					break
				}
			}
			t := Tile{Row: row, Col: col}
			if !samePixels {
				c.Changed = append(c.Changed, t)
				continue
			}
			sameBytes, err := sameTileBytes(a, b, row, col)
			if err != nil {
				return Churn{}, err
			}
			if sameBytes {
				c.Same++
			} else {
				c.Churned = append(c.Churned, t)
			}
		}
	}
	return c, nil
}

// tiles is an open raster plus its file for raw tile reads.
type tiles struct {
	path string
	ds   *godal.Dataset
	f    *os.File
	grid Grid
}

func openTiles(path string) (*tiles, error) {
	ds, err := open(path)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		_ = ds.Close()
		return nil, err
	}
	return &tiles{path: path, ds: ds, f: f, grid: gridOf(ds)}, nil
}

func (t *tiles) close() {
	_ = t.ds.Close() // opened read-only: nothing to flush
	t.f.Close()
}

// block is one stored block's byte range; n == 0 for a sparse block.
type block struct{ off, n int64 }

// blocks lists the distinct stored blocks of tile (row, col) over all
// bands: one for pixel interleaving, one per band for band interleaving.
func (t *tiles) blocks(row, col int) ([]block, error) {
	var out []block
	suffix := strconv.Itoa(col) + "_" + strconv.Itoa(row) // GDAL names x (column) first
	for i, b := range t.ds.Bands() {
		var bl block
		so := b.Metadata("BLOCK_OFFSET_"+suffix, godal.Domain("TIFF"))
		ss := b.Metadata("BLOCK_SIZE_"+suffix, godal.Domain("TIFF"))
		if so != "" && ss != "" {
			off, err1 := strconv.ParseInt(so, 10, 64)
			n, err2 := strconv.ParseInt(ss, 10, 64)
			if err1 != nil || err2 != nil || off < 0 || n < 0 {
				return nil, fmt.Errorf("%s: band %d tile r%d c%d: bad block offset %q size %q", t.path, i+1, row, col, so, ss)
			}
			bl = block{off, n}
		}
		if len(out) > 0 && out[len(out)-1] == bl {
			continue
		}
		out = append(out, bl)
	}
	return out, nil
}

// sameTileBytes reports whether tile (row, col) is stored as the same
// bytes in both rasters.
func sameTileBytes(a, b *tiles, row, col int) (bool, error) {
	ba, err := a.blocks(row, col)
	if err != nil {
		return false, err
	}
	bb, err := b.blocks(row, col)
	if err != nil {
		return false, err
	}
	if len(ba) != len(bb) {
		return false, nil
	}
	for i := range ba {
		if ba[i].n != bb[i].n {
			return false, nil
		}
		eq, err := sameRange(a.f, ba[i].off, b.f, bb[i].off, ba[i].n)
		if err != nil || !eq {
			return false, err
		}
	}
	return true, nil
}

// sameRange compares n bytes at offA in fa with n bytes at offB in fb.
func sameRange(fa *os.File, offA int64, fb *os.File, offB int64, n int64) (bool, error) {
	var pa, pb [64 << 10]byte
	for n > 0 {
		k := min(n, int64(len(pa)))
		if _, err := fa.ReadAt(pa[:k], offA); err != nil {
			return false, fmt.Errorf("read %s: %w", fa.Name(), noEOF(err))
		}
		if _, err := fb.ReadAt(pb[:k], offB); err != nil {
			return false, fmt.Errorf("read %s: %w", fb.Name(), noEOF(err))
		}
		if !bytes.Equal(pa[:k], pb[:k]) {
			return false, nil
		}
		offA, offB, n = offA+k, offB+k, n-k
	}
	return true, nil
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// pixelBuffer returns a buffer godal reads n samples of type dt into
// without conversion, and a byte view of it. Complex integers are read as
// complex floats of twice the width (exact).
func pixelBuffer(dt godal.DataType, n int) (any, []byte, error) {
	switch dt {
	case godal.Byte:
		s := make([]byte, n)
		return s, s, nil
	case godal.Int8:
		s := make([]int8, n)
		return s, view(s), nil
	case godal.UInt16:
		s := make([]uint16, n)
		return s, view(s), nil
	case godal.Int16:
		s := make([]int16, n)
		return s, view(s), nil
	case godal.UInt32:
		s := make([]uint32, n)
		return s, view(s), nil
	case godal.Int32:
		s := make([]int32, n)
		return s, view(s), nil
	case godal.Float32:
		s := make([]float32, n)
		return s, view(s), nil
	case godal.Float64:
		s := make([]float64, n)
		return s, view(s), nil
	case godal.CInt16, godal.CFloat32:
		s := make([]complex64, n)
		return s, view(s), nil
	case godal.CInt32, godal.CFloat64:
		s := make([]complex128, n)
		return s, view(s), nil
	}
	return nil, nil, fmt.Errorf("tile comparison does not support data type %s", dt)
}

func view[T any](s []T) []byte {
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(z)))
}
