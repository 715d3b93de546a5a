package repo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/chunkvc/chunkvc/diff"
	"github.com/chunkvc/chunkvc/diff/rasterstats"
	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/formats/tiff"
	"github.com/chunkvc/chunkvc/manifest"
)

// RasterStats fills in Tiles of every modified (or rewritten) TIFF in res:
// each changed block is decoded in both versions and measured
// (rasterstats.Compare). Stored versions are read through a ChunkReader,
// so only the directory and the changed blocks are fetched, never the
// whole file. A codec this package cannot decode is handed to via when
// it is set (GDAL, in a GDAL build; both versions are then assembled into
// temp files), else it adds one warning "stats: unsupported codec X" to
// the file instead of tiles.
func (r *Repo) RasterStats(ctx context.Context, res *diff.Result, via WindowReader) error {
	cr := r.NewChunkReader(0, 0)
	for i := range res.Files {
		f := &res.Files[i]
		if f.Old() == nil || f.New() == nil || f.Old().Format != formats.TIFF || f.New().Format != formats.TIFF {
			continue
		}
		if err := r.fileStats(ctx, cr, res, f, via); err != nil {
			return fmt.Errorf("stats of %s: %w", f.Path, err)
		}
	}
	return nil
}

// rasterAt opens one version of a TIFF for decoding: the working file
// when work is set, else the stored version of m.
func (r *Repo) rasterAt(ctx context.Context, cr *ChunkReader, m *manifest.Manifest, work bool) (*tiff.Raster, func(), error) {
	var ra io.ReaderAt
	size, done := m.Size, func() {}
	if work {
		f, err := os.Open(r.abs(m.Path))
		if err != nil {
			return nil, nil, err
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, nil, err
		}
		ra, size, done = f, fi.Size(), func() { f.Close() }
	} else {
		fr, err := cr.OpenFile(ctx, m)
		if err != nil {
			return nil, nil, err
		}
		ra = fr
	}
	rs, err := tiff.OpenRaster(ctx, ra, size)
	if err != nil {
		done()
		return nil, nil, err
	}
	return rs, done, nil
}

// WindowReader reads a window of every band of the raster in local file
// name as float64 (gdal.ReadWindow in a GDAL build).
type WindowReader func(name string, win tiff.Window) ([][]float64, error)

// fileStats measures the changed blocks of one TIFF FileDiff.
func (r *Repo) fileStats(ctx context.Context, cr *ChunkReader, res *diff.Result, f *diff.FileDiff, via WindowReader) error {
	work := res.ToCommit == ""
	tiles := changedTiles(f.Changes)
	if len(tiles) == 0 {
		return nil
	}
	pair, err := r.openPair(ctx, cr, f.Old(), f.New(), work)
	if err != nil {
		return err
	}
	defer pair.close()
	for i := range tiles {
		if err := ctx.Err(); err != nil {
			return err
		}
		t := &tiles[i]
		err := pair.compare(t)
		var unsup *tiff.UnsupportedError
		if errors.As(err, &unsup) && via != nil {
			return r.fileStatsVia(ctx, res, f, tiles, pair.cur, via)
		}
		if errors.As(err, &unsup) {
			f.Warnings = append(f.Warnings, "stats: "+unsup.Error())
			return nil
		}
		if err != nil {
			t.Error = "stats: " + err.Error()
		}
	}
	f.Tiles = tiles
	return nil
}

// rasterPair is the two versions of a TIFF, open for decoding blocks.
type rasterPair struct {
	old, cur         *tiff.Raster
	oldFill, curFill float64
	close            func()
}

// openPair opens old (stored) and cur (the working file when work is
// set, else stored) for comparing blocks.
func (r *Repo) openPair(ctx context.Context, cr *ChunkReader, old, cur *manifest.Manifest, work bool) (*rasterPair, error) {
	oldR, doneOld, err := r.rasterAt(ctx, cr, old, false)
	if err != nil {
		return nil, err
	}
	curR, doneCur, err := r.rasterAt(ctx, cr, cur, work)
	if err != nil {
		doneOld()
		return nil, err
	}
	p := &rasterPair{old: oldR, cur: curR, close: func() { doneCur(); doneOld() }}
	p.oldFill, _ = oldR.NoData()
	p.curFill, _ = curR.NoData()
	return p, nil
}

// compare decodes block t.Key in both versions and fills t's statistics
// (rasterstats.Compare); a codec this build cannot decode is a
// *tiff.UnsupportedError.
func (p *rasterPair) compare(t *diff.TileStats) error {
	ob, err := p.old.Block(t.Key, p.oldFill)
	if err != nil {
		return err
	}
	nb, err := p.cur.Block(t.Key, p.curFill)
	if err != nil {
		return err
	}
	return rasterstats.Compare(t, ob, nb)
}

// changedTiles lists the image blocks (not masks) of changes, once each
// however many planes or cut pieces changed, in change order.
func changedTiles(changes []diff.ChunkChange) []diff.TileStats {
	var out []diff.TileStats
	seen := map[string]bool{}
	for _, c := range changes {
		key, k, ok := tiff.BlockKey(c.Key)
		if !ok || k.Mask || seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, diff.TileStats{Key: key, Level: k.Level, Col: k.Col, Row: k.Row, BBox: c.BBox})
	}
	return out
}

// fileStatsVia measures tiles of f with via reading both versions,
// assembled into local files; newR places each block.
func (r *Repo) fileStatsVia(ctx context.Context, res *diff.Result, f *diff.FileDiff, tiles []diff.TileStats, newR *tiff.Raster, via WindowReader) error {
	oldName, doneOld, err := r.FileAt(ctx, res.FromCommit, f.Old().Path)
	if err != nil {
		return err
	}
	defer doneOld()
	newName, doneNew, err := r.FileAt(ctx, res.ToCommit, f.New().Path)
	if err != nil {
		return err
	}
	defer doneNew()
	for i := range tiles {
		t := &tiles[i]
		win, err := newR.BlockWindow(t.Key)
		var ob, nb [][]float64
		if err == nil {
			ob, err = via(oldName, win)
		}
		if err == nil {
			nb, err = via(newName, win)
		}
		if err == nil {
			block := func(b [][]float64) *tiff.Block {
				return &tiff.Block{W: win.W, H: win.H, ValidW: win.W, ValidH: win.H, Bands: b}
			}
			err = rasterstats.Compare(t, block(ob), block(nb))
		}
		if err != nil {
			t.Error = "stats: " + err.Error()
		}
	}
	f.Tiles = tiles
	return nil
}
