package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chunkvc/chunkvc/geom"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo"
)

func newLsChunksCmd(g *globalOptions) *cobra.Command {
	c := &cobra.Command{
		Use:   "ls-chunks [REV:]PATH",
		Short: "List a file's chunks: key, size, hash, footprint",
		Long: `List the chunks of a tracked file as committed at REV (default HEAD): key,
size, BLAKE3 hash and footprint (minx,miny,maxx,maxy in the file's CRS) when
the format gives one. For a dataset (a Zarr store), PATH is its directory
(every chunk of every array) or DIR/ARRAY, one array's chunks (keys
ARRAY/c/<i>/<j>...): ls-chunks cube.zarr/t2m.`,
		Args: argsUsage(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error { return runLsChunks(c.Context(), g, args[0]) },
	}
	addJSON(c, g)
	return c
}

type chunkJSON struct {
	Key  string     `json:"key"`
	Size int64      `json:"size"`
	Hash string     `json:"hash"`
	BBox *geom.BBox `json:"bbox,omitempty"`
}

type lsChunksJSON struct {
	Path     string            `json:"path"`
	Array    string            `json:"array,omitempty"` // ls-chunks DIR/ARRAY: the array's path in the store
	Format   string            `json:"format"`
	Version  int               `json:"format_version"`
	Params   string            `json:"params,omitempty"`
	Fallback string            `json:"fallback,omitempty"`
	Size     int64             `json:"size"`
	Digest   string            `json:"digest"`
	Layout   string            `json:"layout"`
	Summary  map[string]string `json:"summary"`
	Chunks   []chunkJSON       `json:"chunks"`
}

func runLsChunks(ctx context.Context, g *globalOptions, arg string) error {
	r, err := g.open()
	if err != nil {
		return err
	}
	rev, p := repo.SplitRevPath(arg)
	if rev == "" {
		rel, err := g.relPaths(r, []string{p})
		if err != nil {
			return err
		}
		p = rel[0]
	}
	m, err := r.Manifest(rev, p)
	chunks, array := []manifest.Chunk(nil), ""
	if errors.Is(err, repo.ErrNotTracked) {
		m, chunks, err = r.ArrayChunks(ctx, rev, p) // DIR/ARRAY: one array of a dataset
	} else if err == nil {
		chunks = m.Chunks
	}
	if err != nil {
		return err
	}
	if p != m.Path {
		array = strings.TrimPrefix(p, m.Path+"/")
	}
	if g.json {
		out := lsChunksJSON{Path: m.Path, Array: array, Format: m.Format, Version: m.FormatVersion, Params: m.Params, Fallback: m.Fallback,
			Size: m.Size, Digest: m.Digest.String(), Layout: m.Layout.String(), Summary: map[string]string{}, Chunks: []chunkJSON{}}
		for _, f := range m.Summary {
			out.Summary[f.Name] = f.Value
		}
		for _, c := range chunks {
			out.Chunks = append(out.Chunks, chunkJSON{Key: c.Key, Size: c.Size, Hash: c.ID.String(), BBox: c.BBox})
		}
		return g.printJSON(out)
	}
	for _, c := range chunks {
		line := fmt.Sprintf("%s\t%d\t%s", c.Key, c.Size, c.ID)
		if c.BBox != nil {
			line += "\t" + manifest.FormatBBox(*c.BBox)
		}
		fmt.Fprintln(g.stdout, line)
	}
	return nil
}
