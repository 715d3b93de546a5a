package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chunkvc/chunkvc/repo"
)

func newCheckCmd(g *globalOptions) *cobra.Command {
	var allowReencode bool
	c := &cobra.Command{
		Use:   "check [FROM..]TO",
		Short: "Apply the policy gates of .chunkvc/config to a range of commits",
		Long: `Apply the policy gates that .chunkvc/config declares (as TO has it) to every
commit on the first-parent line from FROM (exclusive) to TO, each against
its first parent: what a CI job runs on a pull request (chunkvc check
origin/main..HEAD). TO alone checks its whole first-parent history.

Gates, one a line in .chunkvc/config, each with a glob pattern as track takes:
  append-only = PATTERN       matching files may be added, never changed or removed
  strict-profile = PATTERN    a matching raster's encoding profile (tile, interleave,
                              compression, predictor, overviews) may not change
                              (commit/check --allow-reencode waives it)
  geo-identical = PATTERN     GeoParquet geo metadata of matching files stays
                              byte-identical across versions and sibling files
  crs = CODE PATTERN          matching files are in CRS CODE (e.g. EPSG:4326)

commit applies the same gates to what it is about to commit. Violations
name the commit, file and rule; chunkvc then exits with status 4.
--json prints {"commits", "ok", "violations": [{commit, path, rule, reason}]}.`,
		Args: argsUsage(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			r, err := g.open()
			if err != nil {
				return err
			}
			from, to, ok := strings.Cut(args[0], "..")
			if !ok {
				from, to = "", args[0]
			}
			if to == "" {
				to = "HEAD"
			}
			vs, n, err := r.CheckRange(from, to, repo.PolicyOptions{AllowReencode: allowReencode})
			if err != nil {
				return err
			}
			if g.json {
				if vs == nil {
					vs = []repo.Violation{}
				}
				if err := g.printJSON(map[string]any{"commits": n, "ok": len(vs) == 0, "violations": vs}); err != nil {
					return err
				}
			} else {
				for _, v := range vs {
					fmt.Fprintf(g.stdout, "%.12s %s: %s (%s)\n", v.Commit, v.Path, v.Reason, v.Rule)
				}
				g.say("checked %d commits: %d policy violations\n", n, len(vs))
			}
			if len(vs) > 0 {
				return silentError{fmt.Errorf("check: %d violations: %w", len(vs), repo.ErrPolicy)}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&allowReencode, "allow-reencode", false, "do not apply strict-profile gates")
	addJSON(c, g)
	return c
}
