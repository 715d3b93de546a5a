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
sides, different profiles, or any other file both sides changed is a
conflict, listed in the result above our manifest. Overview tiles both
sides changed are regenerated from the merged full-resolution tiles with
GDAL (this build's, or chunkvc-gdal's) when they are the only conflicts;
without GDAL they are conflicts naming the level and bbox.

Exit status: 0 merged; 1 conflict (git then stops the merge, and
git merge --abort undoes it); other codes as for any command.`,
		Hidden: true,
		Args:   argsUsage(cobra.ExactArgs(4)),
		RunE: func(c *cobra.Command, args []string) error {
			r, err := g.open()
			if err != nil {
				return err
			}
			r.Overviews = overviewRegenerator()
			res, err := r.MergeDriver(c.Context(), args[0], args[1], args[2], args[3])
			if res != nil {
				for _, cf := range res.Conflicts {
					g.say("%s: %s\n", res.Path, repo.ConflictLine(cf))
				}
				if res.Outcome == repo.MergedChunks {
					g.say("merged %s: %d chunks from theirs\n", res.Path, res.FromTheirs)
				}
				if res.Regenerated > 0 {
					g.say("merged %s: %d overview tiles regenerated from the merged pixels\n", res.Path, res.Regenerated)
				}
			}
			return err
		},
	}
	return c
}
