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
// overview's tiles are fetched). A raster whose codec this build cannot
// decode gets a warning "preview: unsupported codec X" and no thumbnail.
// Feature changes come from res.Features (DiffFeatures), when set.
func (r *Repo) Review(ctx context.Context, res *diff.Result) (*review.Page, error) {
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
		th, err := r.thumbs(ctx, cr, res.ToCommit == "", f)
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

// thumbs decodes an overview of each version of TIFF f present.
func (r *Repo) thumbs(ctx context.Context, cr *ChunkReader, work bool, f *diff.FileDiff) (review.Thumb, error) {
	var th review.Thumb
	var nodata float64
	var hasND bool
	decode := func(m *manifest.Manifest, work bool) (*tiff.Block, error) {
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
		return bl, err
	}
	old, err := decode(f.Old(), false)
	if err != nil {
		return th, err
	}
	cur, err := decode(f.New(), work)
	if err != nil {
		return th, err
	}
	th.Before, th.After, err = review.Thumbnails(old, cur, nodata, hasND)
	return th, err
}

// WriteReview writes the review page of revisions from..to to w: the
// diff with raster tile statistics, feature changes and previews (what
// diff --format html writes for two revisions).
func (r *Repo) WriteReview(ctx context.Context, w io.Writer, from, to string) error {
	res, err := r.Diff(ctx, DiffOptions{From: from, To: to, Features: true})
	if err != nil {
		return err
	}
	if err := r.RasterStats(ctx, res, nil); err != nil {
		return err
	}
	if err := r.ZarrStats(ctx, res); err != nil {
		return err
	}
	if res.Features, err = r.DiffFeatures(ctx, res, FeatureOptions{}); err != nil {
		return err
	}
	p, err := r.Review(ctx, res)
	if err != nil {
		return err
	}
	return review.Write(w, p)
}
