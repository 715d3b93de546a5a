//go:build !gdal

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"

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
