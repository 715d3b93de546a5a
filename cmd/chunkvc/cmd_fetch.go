package main

import (
	"github.com/spf13/cobra"
)

func newFetchCmd(g *globalOptions) *cobra.Command {
	c := &cobra.Command{
		Use:   "fetch [REMOTE]",
		Short: "Fetch commits from REMOTE (default origin)",
		Args:  argsUsage(cobra.MaximumNArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			r, err := g.open()
			if err != nil {
				return err
			}
			res, err := r.Fetch(c.Context(), optArg(args))
			if err != nil {
				return err
			}
			if g.json {
				return g.printJSON(res)
			}
			if res.Updated {
				g.say("fetched from %s\n", res.Remote)
			} else {
				g.say("%s: already up to date\n", res.Remote)
			}
			return nil
		},
	}
	addJSON(c, g)
	return c
}
