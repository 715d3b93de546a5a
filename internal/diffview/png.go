package diffview

import (
	"context"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"

	"github.com/chunkvc/chunkvc/diff"
	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/geom"
	"github.com/chunkvc/chunkvc/manifest"
)

// Colours of the PNG map.
var (
	colBackground = color.RGBA{236, 236, 236, 255}
	colExtent     = color.RGBA{90, 90, 90, 255}
	colGrid       = color.RGBA{170, 170, 170, 255}
	colChanged    = color.RGBA{230, 30, 30, 255}
	colConflict   = color.RGBA{200, 0, 200, 255}
	colAdded      = color.RGBA{20, 170, 40, 255}
	colRemoved    = color.RGBA{40, 80, 230, 255}
	colArea       = color.RGBA{255, 200, 0, 255}
)

// canvas maps map coordinates of an extent onto an image.
type canvas struct {
	img    *image.RGBA
	extent geom.BBox
}

func (c *canvas) px(x, y float64) (int, int) {
	b := c.img.Bounds()
	e := c.extent
	fx := (x - e.MinX) / (e.MaxX - e.MinX) * float64(b.Dx())
	fy := (e.MaxY - y) / (e.MaxY - e.MinY) * float64(b.Dy())
	return int(math.Floor(fx)), int(math.Floor(fy))
}

// rect returns the pixel rectangle of box, at least min pixels wide and high.
func (c *canvas) rect(box geom.BBox, minSide int) image.Rectangle {
	x0, y1 := c.px(box.MinX, box.MinY)
	x1, y0 := c.px(box.MaxX, box.MaxY)
	r := image.Rect(x0, y0, x1, y1)
	for r.Dx() < minSide {
		r.Min.X--
		r.Max.X++
	}
	for r.Dy() < minSide {
		r.Min.Y--
		r.Max.Y++
	}
	return r
}

func (c *canvas) outline(r image.Rectangle, col color.RGBA, width int) {
	for i := 0; i < width; i++ {
		rr := r.Inset(i)
		if rr.Empty() {
			return
		}
		for x := rr.Min.X; x < rr.Max.X; x++ {
			c.set(x, rr.Min.Y, col)
			c.set(x, rr.Max.Y-1, col)
		}
		for y := rr.Min.Y; y < rr.Max.Y; y++ {
			c.set(rr.Min.X, y, col)
			c.set(rr.Max.X-1, y, col)
		}
	}
}

func (c *canvas) set(x, y int, col color.RGBA) {
	if image.Pt(x, y).In(c.img.Bounds()) {
		c.img.SetRGBA(x, y, col)
	}
}

// tint blends col over r at alpha a (0..1).
func (c *canvas) tint(r image.Rectangle, col color.RGBA, a float64) {
	r = r.Intersect(c.img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			o := c.img.RGBAAt(x, y)
			mix := func(p, q uint8) uint8 { return uint8(float64(p)*(1-a) + float64(q)*a) }
			c.img.SetRGBA(x, y, color.RGBA{mix(o.R, col.R), mix(o.G, col.G), mix(o.B, col.B), 255})
		}
	}
}

// pngFile picks the file --png draws: the first with a footprint.
func pngFile(res *diff.Result) *diff.FileDiff {
	for i := range res.Files {
		f := &res.Files[i]
		if len(mapChanges(f)) > 0 && (f.Extent != nil || f.BBox != nil) {
			return f
		}
	}
	return nil
}

// gridChunks are the chunks drawn as a grey grid: the finest level of a
// TIFF, every chunk with a footprint otherwise.
func gridChunks(m *manifest.Manifest) []manifest.Chunk {
	if m == nil {
		return nil
	}
	var out []manifest.Chunk
	for _, c := range m.Chunks {
		if c.BBox == nil || (m.Format == formats.TIFF && !atLevel(c.Key, 0)) {
			continue
		}
		out = append(out, c)
	}
	return out
}

// Rasters gives PNG the raster under the outlines. A nil *Rasters, or a
// nil Render (a build without GDAL), draws outlines only.
type Rasters struct {
	// FileAt returns a local file holding path as of commit ("" = the
	// working file) and a cleanup, as repo.Repo.FileAt does.
	FileAt func(ctx context.Context, commit, path string) (name string, cleanup func(), err error)
	// Render draws the raster file name at w×h pixels over its own extent.
	Render func(name string, w, h int) (image.Image, error)
}

// PNG draws the first file of res with footprints to w: its extent, the
// raster at low resolution when rasters can render it, its chunk grid,
// the changed chunks (red changed, green added, blue removed) and the
// changed area (yellow). It returns a note for the user (which file it
// drew, what it left out).
func PNG(ctx context.Context, w io.Writer, res *diff.Result, rasters *Rasters) (note string, err error) {
	f := pngFile(res)
	cv := newCanvas(f)
	if f == nil {
		note = "no changed chunk has a footprint; the picture is empty"
	} else {
		note = "drew " + f.Path
		if others := len(res.Files) - 1; others > 0 {
			note += fmt.Sprintf(" (%d other changed files not drawn; choose one with -- PATH)", others)
		}
		if f.Format == formats.TIFF {
			if msg := drawPreview(ctx, rasters, res, f, cv); msg != "" {
				note += "; " + msg
			}
		}
		drawChanges(cv, f)
	}
	if err := png.Encode(w, cv.img); err != nil {
		return "", err
	}
	return note, nil
}

// newCanvas is a blank picture of f's extent (and every changed
// footprint), at most maxSide pixels a side.
func newCanvas(f *diff.FileDiff) *canvas {
	const maxSide = 1024
	extent := geom.BBox{MaxX: 1, MaxY: 1}
	switch {
	case f == nil:
	case f.Extent != nil:
		extent = *f.Extent
	default:
		extent = *f.BBox
	}
	if f != nil {
		for _, c := range mapChanges(f) {
			extent = extent.Union(*c.BBox)
		}
	}
	ew, eh := extent.MaxX-extent.MinX, extent.MaxY-extent.MinY
	if ew <= 0 || eh <= 0 {
		ew, eh = 1, 1
		extent.MaxX, extent.MaxY = extent.MinX+1, extent.MinY+1
	}
	w, h := maxSide, maxSide
	if ew > eh {
		h = max(64, int(math.Round(maxSide*eh/ew)))
	} else {
		w = max(64, int(math.Round(maxSide*ew/eh)))
	}
	cv := &canvas{img: image.NewRGBA(image.Rect(0, 0, w, h)), extent: extent}
	draw.Draw(cv.img, cv.img.Bounds(), image.NewUniform(colBackground), image.Point{}, draw.Src)
	return cv
}

// drawChanges outlines f's chunk grid and extent, then its changed chunks
// and changed area.
func drawChanges(cv *canvas, f *diff.FileDiff) {
	m := f.New()
	if m == nil {
		m = f.Old()
	}
	grid := gridChunks(m)
	if len(grid) <= 20000 {
		for _, c := range grid {
			cv.outline(cv.rect(*c.BBox, 1), colGrid, 1)
		}
	}
	cv.outline(cv.rect(cv.extent, 1), colExtent, 1)
	for _, c := range mapChanges(f) {
		rr := cv.rect(*c.BBox, 5)
		col := colChanged
		switch c.Change {
		case diff.ChunkAdded:
			col = colAdded
		case diff.ChunkRemoved:
			col = colRemoved
		case diff.ChunkConflict:
			col = colConflict
		}
		cv.tint(rr, col, 0.3)
		cv.outline(rr, col, 2)
	}
	if f.BBox != nil {
		cv.outline(cv.rect(*f.BBox, 9).Inset(-3), colArea, 2)
	}
}

// drawPreview paints a low-resolution rendering of the raster's new version
// (the old one when deleted) under the outlines, and returns a note when it
// cannot.
func drawPreview(ctx context.Context, rasters *Rasters, res *diff.Result, f *diff.FileDiff, cv *canvas) string {
	commit, p := res.ToCommit, f.Path
	if f.Status == diff.Deleted {
		commit = res.FromCommit
	}
	if rasters == nil || rasters.Render == nil || rasters.FileAt == nil {
		return "outlines only (built without GDAL)"
	}
	file, cleanup, err := rasters.FileAt(ctx, commit, p)
	if err != nil {
		return "no raster preview: " + err.Error()
	}
	defer cleanup()
	// Render at the canvas's resolution over the raster's own extent.
	rb := f.Extent
	if rb == nil {
		return "no raster preview: the raster has no extent"
	}
	dst := cv.rect(*rb, 1).Intersect(cv.img.Bounds())
	if dst.Empty() {
		return ""
	}
	img, err := rasters.Render(file, dst.Dx(), dst.Dy())
	if err != nil {
		return "no raster preview: " + err.Error()
	}
	draw.Draw(cv.img, dst, img, img.Bounds().Min, draw.Over)
	return ""
}
