package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/chunkvc/chunkvc/repo"
)

func newResolveCmd(g *globalOptions) *cobra.Command {
	var ours, theirs bool
	var take string
	c := &cobra.Command{
		Use:   "resolve PATH (--ours | --theirs | --take ours|theirs KEY...)",
		Short: "Settle a conflicted data file of a stopped merge",
		Long: `Settle a data file that a stopped merge, pull, cherry-pick or rebase left
conflicted (chunkvc status lists them, with their keys).

  --ours / --theirs         the whole file becomes that side's version: its
                            manifest from that side's commit, its bytes
                            written into the work tree
  --take ours|theirs KEY... that side wins the conflicts named (a COG's tile
                            keys such as z0/r3/c4, a Zarr dataset's file
                            paths such as t2m/0.0.0, a FlatGeobuf's feature
                            keys such as id=7, a Parquet file's row groups
                            such as rg2); the other changes of
                            both sides are merged as chunkvc merge does

The file's manifest is then added to git's index; once nothing is left
conflicted, finish with git commit (or chunkvc merge --continue). Exit 1 when
conflicts are left (listed), --json prints {"path", "outcome",
"chunks_from_theirs", "conflicts"}.`,
		Args: argsUsage(func(c *cobra.Command, args []string) error {
			switch {
			case take != "" && (ours || theirs), ours && theirs:
				return errors.New("choose one of --ours, --theirs and --take")
			case take != "" && take != "ours" && take != "theirs":
				return fmt.Errorf("--take %q: say ours or theirs", take)
			case take != "" && len(args) < 2:
				return errors.New("--take needs PATH and the keys it settles")
			case take == "" && !ours && !theirs:
				return errors.New("say --ours, --theirs or --take")
			case take == "" && len(args) != 1:
				return errors.New("--ours and --theirs take one PATH")
			}
			return nil
		}),
		RunE: func(c *cobra.Command, args []string) error {
			r, err := g.open()
			if err != nil {
				return err
			}
			r.Overviews = overviewRegenerator() // the keys not named merge as chunkvc merge does
			opt := repo.ResolveOptions{Path: args[0], Theirs: theirs || take == "theirs", Keys: args[1:]}
			res, err := r.Resolve(c.Context(), opt)
			if res != nil {
				if g.json {
					if perr := g.printJSON(res); perr != nil {
						return perr
					}
				} else {
					for _, cf := range res.Conflicts {
						fmt.Fprintf(g.stdout, "%s\n", repo.ConflictLine(cf))
					}
					if err == nil {
						g.say("resolved %s (%s)\n", res.Path, res.Outcome)
					}
				}
			}
			return err
		},
	}
	c.Flags().BoolVar(&ours, "ours", false, "take our whole version")
	c.Flags().BoolVar(&theirs, "theirs", false, "take their whole version")
	c.Flags().StringVar(&take, "take", "", "take `SIDE` (ours or theirs) for the conflicted keys named")
	addJSON(c, g)
	return c
}
