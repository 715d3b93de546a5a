package main

import (
	"github.com/spf13/cobra"

	"github.com/chunkvc/chunkvc/repo"
)

func newPullCmd(g *globalOptions) *cobra.Command {
	c := &cobra.Command{
		Use:   "pull [REMOTE]",
		Short: "Fetch from REMOTE, merge, and check out what changed",
		Long: `Fetch from REMOTE (default origin), bring the current branch up to its
upstream, and write the tracked files that changed, downloading only the
chunks that no working file or cache already holds. A branch that has
diverged from its upstream (a push was refused as non-fast-forward) is
merged with it as chunkvc merge does, data files chunk by chunk; on
conflicts the merge stops (exit 1) with the conflicts listed, and --json
prints them under "merged".`,
		Args: argsUsage(cobra.MaximumNArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			r, err := g.open()
			if err != nil {
				return err
			}
			r.Overviews = overviewRegenerator() // a diverged branch is merged as chunkvc merge does
			co, err := r.Pull(c.Context(), optArg(args), g.progress())
			if co != nil && co.Merged != nil && !g.json {
				printMerge(g, co.Merged)
			}
			if err != nil {
				if co != nil && g.json {
					if perr := g.printJSON(co); perr != nil {
						return perr
					}
				}
				return err
			}
			if g.json {
				return g.printJSON(co)
			}
			for _, f := range co.Files {
				if f.Status == repo.FileWritten {
					g.say("wrote      %s  (%d chunks reused, %d fetched = %s)\n", f.Path, f.ChunksReused+f.ChunksLocal, f.ChunksFetched, humanBytes(f.BytesFetched))
				}
			}
			return nil
		},
	}
	addJSON(c, g)
	return c
}
