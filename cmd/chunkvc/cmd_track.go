package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newTrackCmd(g *globalOptions) *cobra.Command {
	c := &cobra.Command{
		Use:   "track PATTERN...",
		Short: "Track files matching glob patterns",
		Long: `Track files matching glob patterns. A pattern without a slash matches file
names at any depth (*.tif); one with a slash is anchored at the repository
root, and ** matches any number of directories (data/**/*.parquet).
Tracked files are kept out of Git through a block in .gitignore; their
manifests under .chunkvc/manifests/ are committed instead. With no
arguments, lists the tracked patterns.`,
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
	added := []string{}
	if len(args) > 0 {
		if added, err = r.Track(args); err != nil {
			return usageError{err}
		}
	}
	if g.json {
		return g.printJSON(map[string]any{"patterns": r.Config.Track, "added": added})
	}
	if len(args) == 0 {
		for _, p := range r.Config.Track {
			fmt.Fprintln(g.stdout, p)
		}
		return nil
	}
	for _, p := range added {
		g.say("Tracking %q\n", p)
	}
	return nil
}
