package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/chunkvc/chunkvc/repo"
)

func newMergeCmd(g *globalOptions) *cobra.Command {
	var message string
	var cont bool
	c := &cobra.Command{
		Use:   "merge REV... | merge --continue",
		Short: "Merge branches with data files merged chunk by chunk",
		Long: `Merge REV into the current branch with git merge,
after making sure chunkvc's merge driver and post-merge hook are installed
(chunkvc install), so that a COG both sides edited in different tiles is
merged tile by tile and files only the other side changed are checked
out. See "Branches and merges" in the README for what merges and what
conflicts.

Git hands its merge driver one file at a time, so a file large enough to
have a split manifest, or a Zarr dataset, that both sides changed stops
git; chunkvc merge then merges it itself, chunk by chunk (a dataset file
by file, its metadata when only one side changed it or only its shape),
and makes the merge commit. After a plain git merge, git pull or git
cherry-pick stopped on such files, chunkvc merge --continue does the same
(for a cherry-pick or rebase, finish with git cherry-pick|rebase
--continue).

On conflicts the merge stops as git's does (exit 1) and the conflicted
paths are listed with chunkvc's conflict lines (key, bbox, reason);
resolve them and commit, or git merge --abort.

Several revisions (chunkvc merge A B C D) make one octopus merge commit
whose parents are HEAD, A, B, C and D, whenever merging them one after
another would succeed: git's octopus strategy never runs merge drivers,
so chunkvc merges them one at a time with HEAD detached, each as above,
then commits the last tree with those parents and moves the branch once,
checking it did not move meanwhile. It needs a clean work tree, and no
untracked file where a revision adds one. On a
conflict at any step everything goes back as it was (branch, index, work
tree, no MERGE_HEAD) and the error names the revision and the conflicted
files and keys: merge that one alone to resolve it. A merge killed
halfway leaves the branch as it was and HEAD detached; the next merge
says how to go back.

--json prints {"commit", "merged", "files", "parents", "conflicts":
[{path, conflicts}], "resolved": [{path, outcome, chunks_from_theirs,
conflicts}], "stopped_at"} (parents and stopped_at: several revisions).`,
		Args: argsUsage(func(c *cobra.Command, args []string) error {
			if cont {
				return cobra.NoArgs(c, args)
			}
			return cobra.MinimumNArgs(1)(c, args)
		}),
		RunE: func(c *cobra.Command, args []string) error {
			r, err := g.open()
			if err != nil {
				return err
			}
			r.Overviews = overviewRegenerator()
			merge := func() (*repo.MergeRun, error) { return r.Merge(c.Context(), args, message) }
			if cont {
				merge = func() (*repo.MergeRun, error) { return r.MergeContinue(c.Context()) }
			}
			res, err := merge()
			if res != nil {
				if g.json {
					if perr := g.printJSON(res); perr != nil {
						return perr
					}
				} else {
					printMerge(g, res)
				}
			}
			return err
		},
	}
	c.Flags().StringVarP(&message, "message", "m", "", "the merge commit's message (default: git's)")
	c.Flags().BoolVar(&cont, "continue", false, "settle the files a stopped git merge, pull or cherry-pick left to chunkvc, and commit a merge")
	addJSON(c, g)
	return c
}

// printMerge lists what a merge (chunkvc merge, or pull's) did.
func printMerge(g *globalOptions, res *repo.MergeRun) {
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
