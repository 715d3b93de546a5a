package repo

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/chunkvc/chunkvc/diff"
	"github.com/chunkvc/chunkvc/diff/review"
	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/formats/tiff"
	"github.com/chunkvc/chunkvc/manifest"
)

// thumbMinSide is the smallest overview side a preview is decoded from:
// the page draws maps about this wide, so a coarser level would blur and
// a finer one would read more tiles for nothing.
const thumbMinSide = 256

// Review returns the review page's input for res (review.Write draws it):
// before and after thumbnails of each TIFF, decoded from an overview of
// each version (stored versions read through a ChunkReader, so only the
// overview's tiles are fetched). An overview whose codec this build cannot
// decode (JPEG, WebP…) is read with via (GDAL) when given, from the
// version assembled into a local file; without via the raster gets a
// warning "preview: unsupported codec X" and no thumbnail. Feature
// changes come from res.Features (DiffFeatures), when set.
func (r *Repo) Review(ctx context.Context, res *diff.Result, via WindowReader) (*review.Page, error) {
	p := &review.Page{Result: res, Thumbs: map[string]review.Thumb{}}
	if res.Features != nil {
		fs, err := review.FeaturesFrom(res.Features)
		if err != nil {
			return nil, err
		}
		p.Features = fs
	}
	cr := r.NewChunkReader(0, 0)
	for i := range res.Files {
		f := &res.Files[i]
		if f.Format != formats.TIFF || f.Extent == nil {
			continue
		}
		th, err := r.thumbs(ctx, cr, res, f, via)
		var unsup *tiff.UnsupportedError
		if errors.As(err, &unsup) {
			f.Warnings = append(f.Warnings, "preview: "+unsup.Error())
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("preview of %s: %w", f.Path, err)
		}
		th.Extent = *f.Extent
		p.Thumbs[f.Path] = th
	}
	return p, nil
}

// thumbs decodes an overview of each version of TIFF f present, with via
// when this build cannot decode it.
func (r *Repo) thumbs(ctx context.Context, cr *ChunkReader, res *diff.Result, f *diff.FileDiff, via WindowReader) (review.Thumb, error) {
	var th review.Thumb
	var nodata float64
	var hasND bool
	decode := func(m *manifest.Manifest, commit string, work bool) (*tiff.Block, error) {
		if m == nil || m.Format != formats.TIFF {
			return nil, nil
		}
		ra, done, err := r.rasterAt(ctx, cr, m, work)
		if err != nil {
			return nil, err
		}
		defer done()
		if v, ok := ra.NoData(); ok {
			nodata, hasND = v, true
		}
		bl, _, err := ra.Overview(thumbMinSide, nodata)
		var unsup *tiff.UnsupportedError
		if errors.As(err, &unsup) && via != nil {
			return r.overviewVia(ctx, ra, commit, m.Path, via)
		}
		return bl, err
	}
	old, err := decode(f.Old(), res.FromCommit, false)
	if err != nil {
		return th, err
	}
	cur, err := decode(f.New(), res.ToCommit, res.ToCommit == "")
	if err != nil {
		return th, err
	}
	th.Before, th.After, err = review.Thumbnails(old, cur, nodata, hasND)
	return th, err
}

// overviewVia reads ra's preview image with via from path as of commit
// (the working file when commit is empty), assembled into a local file.
func (r *Repo) overviewVia(ctx context.Context, ra *tiff.Raster, commit, path string, via WindowReader) (*tiff.Block, error) {
	win, err := ra.OverviewWindow(thumbMinSide)
	if err != nil {
		return nil, err
	}
	name, done, err := r.FileAt(ctx, commit, path)
	if err != nil {
		return nil, err
	}
	defer done()
	bands, err := via(name, win)
	if err != nil {
		return nil, err
	}
	return &tiff.Block{W: win.W, H: win.H, ValidW: win.W, ValidH: win.H, Bands: bands}, nil
}

// WriteReview writes the review page of revisions from..to to w: the
// diff with raster tile statistics, feature changes and previews (what
// diff --format html writes for two revisions). via reads the tiles and
// previews this build cannot decode (JPEG, WebP…), as for Review and
// RasterStats; nil leaves warnings instead.
func (r *Repo) WriteReview(ctx context.Context, w io.Writer, from, to string, via WindowReader) error {
	res, err := r.Diff(ctx, DiffOptions{From: from, To: to, Features: true})
	if err != nil {
		return err
	}
	if err := r.RasterStats(ctx, res, via); err != nil {
		return err
	}
	if err := r.ZarrStats(ctx, res); err != nil {
		return err
	}
	if res.Features, err = r.DiffFeatures(ctx, res, FeatureOptions{}); err != nil {
		return err
	}
	p, err := r.Review(ctx, res, via)
	if err != nil {
		return err
	}
	return review.Write(w, p)
}
