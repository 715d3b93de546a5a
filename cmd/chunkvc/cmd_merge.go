package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newMergeCmd(g *globalOptions) *cobra.Command {
	var message string
	c := &cobra.Command{
		Use:   "merge REV...",
		Short: "Merge branches with data files merged chunk by chunk",
		Long: `Merge REV (several: an octopus merge) into the current branch with git merge,
after making sure chunkvc's merge driver and post-merge hook are installed
(chunkvc install), so that a COG both sides edited in different tiles is
merged tile by tile and files only the other side changed are checked
out. See "Branches and merges" in the README for what merges and what
conflicts.

On conflicts the merge stops as git's does (exit 1) and the conflicted
paths are listed with chunkvc's conflict lines (key, bbox, reason);
resolve them and commit, or git merge --abort. --json prints {"commit",
"merged", "files", "conflicts": [{path, conflicts}]}.`,
		Args: argsUsage(cobra.MinimumNArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			r, err := g.open()
			if err != nil {
				return err
			}
			res, err := r.Merge(c.Context(), args, message)
			if res != nil {
				if g.json {
					if perr := g.printJSON(res); perr != nil {
						return perr
					}
				} else {
					for _, f := range res.Files {
						fmt.Fprintf(g.stdout, " merged    %s\n", f)
					}
					for _, cf := range res.Conflicts {
						fmt.Fprintf(g.stdout, " conflict  %s\n", cf.Path)
						for _, l := range cf.Lines {
							fmt.Fprintf(g.stdout, "           %s\n", l)
						}
					}
					if res.Commit != "" {
						g.say("merge commit %.12s\n", res.Commit)
					}
				}
			}
			return err
		},
	}
	c.Flags().StringVarP(&message, "message", "m", "", "the merge commit's message (default: git's)")
	addJSON(c, g)
	return c
}
