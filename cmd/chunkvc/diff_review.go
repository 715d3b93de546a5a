package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/chunkvc/chunkvc/diff"
	"github.com/chunkvc/chunkvc/diff/review"
	"github.com/chunkvc/chunkvc/repo"
)

// diffOutput returns where diff writes (stdout, or the file -o names) and
// what finishes it: done(err) closes the file and returns the first error.
func diffOutput(g *globalOptions, name string) (io.Writer, func(error) error, error) {
	if name == "" {
		return g.stdout, func(err error) error { return err }, nil
	}
	f, err := os.Create(name)
	if err != nil {
		return nil, nil, err
	}
	return f, func(err error) error {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
		return nil
	}, nil
}

// writeReview writes the review page of res (package review); a GDAL
// build previews the rasters chunkvc cannot decode (JPEG, WebP…) too.
func writeReview(ctx context.Context, r *repo.Repo, res *diff.Result, w io.Writer) error {
	p, err := r.Review(ctx, res, diffWindows())
	if err != nil {
		return err
	}
	return review.Write(w, p)
}
