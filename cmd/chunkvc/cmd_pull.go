package main

import (
	"github.com/spf13/cobra"

	"github.com/chunkvc/chunkvc/repo"
)

func newPullCmd(g *globalOptions) *cobra.Command {
	c := &cobra.Command{
		Use:   "pull [REMOTE]",
		Short: "Fast-forward from REMOTE and check out what changed",
		Long: `Fetch from REMOTE (default origin), fast-forward the current branch, and
write the tracked files that changed, downloading only the chunks that no
working file or cache already holds.`,
		Args: argsUsage(cobra.MaximumNArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			r, err := g.open()
			if err != nil {
				return err
			}
			co, err := r.Pull(c.Context(), optArg(args), g.progress())
			if err != nil {
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
