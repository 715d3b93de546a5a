package main

import (
	"encoding/json"
	"errors"

	"github.com/spf13/cobra"

	"github.com/chunkvc/chunkvc/repo"
)

// errNoGDALOverviews: merge-overviews run by a build without GDAL.
var errNoGDALOverviews = errors.New("merge-overviews: this chunkvc is built without GDAL")

// newMergeOverviewsCmd is the step of a merge the plain chunkvc hands to
// chunkvc-gdal (hidden): regenerating a merged COG's overviews, and
// comparing a file's overviews with them. It prints JSON.
func newMergeOverviewsCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:    "merge-overviews regenerate SRC DIR SPEC | differ PATH - REGENERATED",
		Short:  "Regenerate a merged COG's overviews with GDAL (used by merges)",
		Hidden: true,
		Args:   argsUsage(cobra.ExactArgs(4)),
		RunE: func(c *cobra.Command, args []string) error {
			o := localOverviews()
			if o == nil {
				return errNoGDALOverviews
			}
			var out any
			var err error
			switch args[0] {
			case "regenerate":
				var spec repo.OverviewSpec
				if err = json.Unmarshal([]byte(args[3]), &spec); err == nil {
					out, err = o.Regenerate(c.Context(), args[1], args[2], spec)
				}
			case "differ":
				var reg repo.RegeneratedOverviews
				if err = json.Unmarshal([]byte(args[3]), &reg); err == nil {
					var d []string
					d, err = o.Differ(c.Context(), args[1], &reg)
					out = append([]string{}, d...)
				}
			default:
				return usageError{errors.New("merge-overviews: regenerate or differ")}
			}
			if err != nil {
				return err
			}
			return g.printJSON(out)
		},
	}
}
