package main

import (
	"github.com/chunkvc/chunkvc/repo"
	"github.com/spf13/cobra"
)

// newMergeDriverCmd is Git's merge driver for manifests (hidden; set up by
// chunkvc install as merge.chunkvc.driver = chunkvc merge-driver %O %A %B %P).
func newMergeDriverCmd(g *globalOptions) *cobra.Command {
	c := &cobra.Command{
		Use:   "merge-driver BASE OURS THEIRS PATH",
		Short: "Merge three versions of a manifest chunk by chunk (Git merge driver)",
		Long: `Merge a manifest three ways, as Git's merge driver: BASE, OURS and THEIRS
are files holding the merge base's, our and their version (Git's %O %A %B),
PATH the manifest's path in the repository (%P). The result replaces OURS.
A COG both sides changed in different full-resolution tiles is spliced
into a new file in the work tree and stored; the same tile changed on both
sides, an overview tile changed on both sides, different profiles, or any
other file both sides changed is a conflict, listed in the result above
our manifest.

Exit status: 0 merged; 1 conflict (git then stops the merge, and
git merge --abort undoes it); other codes as for any command.`,
		Hidden: true,
		Args:   argsUsage(cobra.ExactArgs(4)),
		RunE: func(c *cobra.Command, args []string) error {
			r, err := g.open()
			if err != nil {
				return err
			}
			res, err := r.MergeDriver(c.Context(), args[0], args[1], args[2], args[3])
			if res != nil {
				for _, cf := range res.Conflicts {
					g.say("%s: %s\n", res.Path, repo.ConflictLine(cf))
				}
				if res.Outcome == repo.MergedChunks {
					g.say("merged %s: %d chunks from theirs\n", res.Path, res.FromTheirs)
				}
			}
			return err
		},
	}
	return c
}
