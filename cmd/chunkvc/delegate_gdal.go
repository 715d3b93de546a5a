//go:build gdal

package main

import (
	"context"
	"io"

	"github.com/chunkvc/chunkvc/gdal"
	"github.com/chunkvc/chunkvc/repo"
)

// delegateToGDAL: this build has GDAL itself.
func delegateToGDAL([]string) {}

// overviewRegenerator is GDAL, in this process.
func overviewRegenerator() repo.OverviewRegenerator { return gdalOverviews{} }

// localOverviews is GDAL, in this process.
func localOverviews() repo.OverviewRegenerator { return gdalOverviews{} }

// gdalOverviews regenerates a merged COG's overviews with package gdal.
type gdalOverviews struct{}

func (gdalOverviews) Regenerate(_ context.Context, src, dir string, spec repo.OverviewSpec) (*repo.RegeneratedOverviews, error) {
	g, err := gdal.RegenerateOverviews(src, dir, gdal.OverviewSpec{Compress: spec.Compress, Predictor: spec.Predictor, Allowed: spec.Allowed})
	if err != nil {
		return nil, err
	}
	return &repo.RegeneratedOverviews{Path: g.Path, Overviews: g.Overviews, Resampling: g.Resampling, Blocks: g.Blocks}, nil
}

func (gdalOverviews) Differ(_ context.Context, path string, reg *repo.RegeneratedOverviews) ([]string, error) {
	return gdal.DifferentOverviewTiles(path, &gdal.Regenerated{Path: reg.Path, Overviews: reg.Overviews, Resampling: reg.Resampling, Blocks: reg.Blocks})
}

// reviewPages writes serve's review pages in this process, GDAL reading
// the rasters Go cannot decode (JPEG, WebP…).
func reviewPages(r *repo.Repo) func(ctx context.Context, w io.Writer, from, to string) error {
	return func(ctx context.Context, w io.Writer, from, to string) error {
		return r.WriteReview(ctx, w, from, to, diffWindows())
	}
}
