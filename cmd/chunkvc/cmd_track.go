package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newTrackCmd(g *globalOptions) *cobra.Command {
	c := &cobra.Command{
		Use:   "track PATTERN|DATASET...",
		Short: "Track files matching glob patterns, or Zarr stores as datasets",
		Long: `Track files matching glob patterns. A pattern without a slash matches file
names at any depth (*.tif); one with a slash is anchored at the repository
root, and ** matches any number of directories (data/**/*.parquet).
Tracked files are kept out of Git through a block in .gitignore; their
manifests under .chunkvc/manifests/ are committed instead.

An argument naming a Zarr store's directory (its root holds .zgroup,
.zarray or zarr.json) tracks the store as one dataset (a "dataset = DIR"
line in .chunkvc/config): its metadata documents are kept byte for byte,
every chunk file is a chunk keyed by its array and grid coordinates, and
the store is committed, diffed and checked out as one unit. A store
chunkvc cannot read as Zarr is tracked as plain files (DIR/**), with the
reason shown; any other directory is an error.

With no arguments, lists the tracked patterns and datasets.`,
		RunE: func(c *cobra.Command, args []string) error { return runTrack(g, args) },
	}
	addJSON(c, g)
	return c
}

func runTrack(g *globalOptions, args []string) error {
	r, err := g.open()
	if err != nil {
		return err
	}
	added, notes := []string{}, []string{}
	if len(args) > 0 {
		if added, notes, err = r.TrackWithNotes(args); err != nil {
			return usageError{err}
		}
	}
	if g.json {
		return g.printJSON(map[string]any{"patterns": r.Config.Track, "datasets": r.Config.Datasets, "added": added, "notes": notes})
	}
	if len(args) == 0 {
		for _, p := range r.Config.Track {
			fmt.Fprintln(g.stdout, p)
		}
		for _, d := range r.Config.Datasets {
			fmt.Fprintf(g.stdout, "%s (dataset)\n", d)
		}
		return nil
	}
	for _, n := range notes {
		g.say("note: %s\n", n)
	}
	for _, p := range added {
		if r.Config.IsDataset(p) {
			g.say("Tracking dataset %q (Zarr store)\n", p)
			continue
		}
		g.say("Tracking %q\n", p)
	}
	return nil
}
