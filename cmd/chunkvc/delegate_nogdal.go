//go:build !gdal

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/chunkvc/chunkvc/repo"
)

// delegateToGDAL hands a command that needs GDAL (normalize; diff --png,
// --format geojson or html, or --stats, which render, reproject and decode
// with it)
// to chunkvc-gdal,
// the same program built with the gdal tag, when it is installed beside
// this one or on PATH. The everyday binary stays free of GDAL's shared
// libraries, whose loading costs ~50 ms on every command.
func delegateToGDAL(args []string) {
	if len(args) < 2 {
		return
	}
	png := func(a string) bool { return a == "--png" || len(a) > 6 && a[:6] == "--png=" }
	// geojson, of chunk footprints or of --features geometries, is
	// reprojected to lon/lat with GDAL.
	needs := args[1] == "normalize" ||
		args[1] == "diff" && slices.ContainsFunc(args[2:], func(a string) bool {
			return png(a) || a == "geojson" || a == "--format=geojson" || a == "png" || a == "--format=png" ||
				// tiles chunkvc cannot decode (JPEG, WebP…) are read with GDAL,
				// for statistics and the review page's previews
				a == "--stats" || a == "html" || a == "--format=html"
		})
	if !needs {
		return
	}
	bin := companion("chunkvc-gdal")
	if bin == "" {
		return // run here: normalize explains, diff draws outlines only
	}
	_ = syscall.Exec(bin, append([]string{bin}, args[1:]...), os.Environ())
}

// overviewRegenerator is chunkvc-gdal, run for each step of an overview
// regeneration (merge-overviews), when it is installed; else nil, and
// merges leave overview tiles both sides changed as conflicts.
func overviewRegenerator() repo.OverviewRegenerator {
	if bin := companion("chunkvc-gdal"); bin != "" {
		return companionOverviews{bin}
	}
	return nil
}

// localOverviews: this build has no GDAL.
func localOverviews() repo.OverviewRegenerator { return nil }

// companionOverviews runs chunkvc-gdal merge-overviews.
type companionOverviews struct{ bin string }

func (c companionOverviews) Regenerate(ctx context.Context, src, dir string, spec repo.OverviewSpec) (*repo.RegeneratedOverviews, error) {
	var out repo.RegeneratedOverviews
	return &out, c.run(ctx, &out, "regenerate", src, dir, spec)
}

func (c companionOverviews) Differ(ctx context.Context, path string, reg *repo.RegeneratedOverviews) ([]string, error) {
	var out []string
	return out, c.run(ctx, &out, "differ", path, "", reg)
}

// run runs merge-overviews STEP A B JSON(arg) and decodes its output.
func (c companionOverviews) run(ctx context.Context, out any, step, a, b string, arg any) error {
	js, err := json.Marshal(arg)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, c.bin, "merge-overviews", step, a, b, string(js))
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s merge-overviews %s: %w: %s", c.bin, step, err, strings.TrimSpace(se.String()))
	}
	if err := json.Unmarshal(so.Bytes(), out); err != nil {
		return fmt.Errorf("%s merge-overviews %s: %w", c.bin, step, err)
	}
	return nil
}

// Bounds on one review page that chunkvc-gdal writes for serve.
const (
	companionReviewTimeout = 5 * time.Minute
	maxCompanionPage       = 256 << 20 // bytes of HTML
	maxCompanionStderr     = 8 << 10
)

// reviewPages is chunkvc-gdal diff --format html when it is installed, so
// that serve's review pages preview JPEG and WebP rasters as diff's do;
// else nil, and those rasters get a warning instead of previews.
func reviewPages(r *repo.Repo) func(ctx context.Context, w io.Writer, from, to string) error {
	if bin := companion("chunkvc-gdal"); bin != "" {
		return companionReview{bin: bin, dir: r.Root, timeout: companionReviewTimeout, maxPage: maxCompanionPage}.write
	}
	return nil
}

// companionReview runs bin (chunkvc-gdal) diff --format html in the
// repository at dir: no shell, revisions checked, stopped after timeout or
// once the page passes maxPage bytes, its error text bounded.
type companionReview struct {
	bin, dir string
	timeout  time.Duration
	maxPage  int
}

func (c companionReview) write(ctx context.Context, w io.Writer, from, to string) error {
	for _, rev := range []string{from, to} {
		if rev == "" || strings.HasPrefix(rev, "-") || strings.ContainsFunc(rev, unicode.IsControl) {
			return fmt.Errorf("review: revision %q refused", rev)
		}
	}
	ctx, cancel := context.WithTimeoutCause(ctx, c.timeout, fmt.Errorf("no page after %v: %w", c.timeout, context.DeadlineExceeded))
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, "diff", "-q", "--progress", "none", "--format", "html", from, to)
	cmd.Dir = c.dir
	cmd.WaitDelay = 5 * time.Second
	page := &cappedBuffer{max: c.maxPage, full: cancel}
	stderr := &cappedBuffer{max: maxCompanionStderr}
	cmd.Stdout, cmd.Stderr = page, stderr
	err := cmd.Run()
	switch {
	case page.over:
		return fmt.Errorf("%s diff --format html: page larger than %d bytes", c.bin, c.maxPage)
	case ctx.Err() != nil: // the time limit, or the client went away
		return fmt.Errorf("%s diff --format html: %w", c.bin, context.Cause(ctx))
	case err != nil:
		return fmt.Errorf("%s diff --format html: %w: %s", c.bin, err, strings.TrimSpace(stderr.buf.String()))
	}
	_, err = w.Write(page.buf.Bytes())
	return err
}

// cappedBuffer keeps the first max bytes written to it and drops the
// rest, calling full (if set) once when it starts to: it never fails a
// write, so that a program writing to it never blocks on a full pipe. It
// has no ReadFrom (the buffer is not embedded), so io.Copy goes through
// Write.
type cappedBuffer struct {
	buf  bytes.Buffer
	max  int
	over bool
	full func()
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); len(p) > room {
		b.buf.Write(p[:max(room, 0)])
		if !b.over && b.full != nil {
			b.full()
		}
		b.over = true
		return len(p), nil
	}
	return b.buf.Write(p)
}
