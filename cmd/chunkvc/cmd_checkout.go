package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/chunkvc/chunkvc/repo"
)

type checkoutOptions struct {
	force bool
}

func newCheckoutCmd(g *globalOptions) *cobra.Command {
	var o checkoutOptions
	c := &cobra.Command{
		Use:   "checkout [REV] [-- PATH...]",
		Short: "Write tracked files as recorded at REV into the work tree",
		Long: `Write the tracked files as recorded at REV (default HEAD) into the work tree,
fetching only chunks the working files do not already hold. HEAD does not
move (use git switch, then chunkvc checkout). Every chunk and every whole
file is verified before it is renamed into place, so a file is never
half-written or wrong under its real name.

A working file whose bytes are not stored (uncommitted changes) is not
overwritten unless --force is given.`,
		RunE: func(c *cobra.Command, args []string) error { return runCheckout(g, o, c, args) },
	}
	c.Flags().BoolVarP(&o.force, "force", "f", false, "overwrite working files even if they hold uncommitted changes")
	addJSON(c, g)
	return c
}

func runCheckout(g *globalOptions, o checkoutOptions, c *cobra.Command, args []string) error {
	rev, paths := "", args
	if dash := c.ArgsLenAtDash(); dash >= 0 {
		if dash > 1 {
			return usageError{fmt.Errorf("checkout takes one REV before --, got %d", dash)}
		}
		if dash == 1 {
			rev = args[0]
		}
		paths = args[dash:]
	} else if len(args) > 0 {
		rev, paths = args[0], args[1:]
	}
	r, err := g.open()
	if err != nil {
		return err
	}
	rel, err := g.relPaths(r, paths)
	if err != nil {
		return err
	}
	res, err := r.Checkout(c.Context(), repo.CheckoutOptions{Rev: rev, Paths: rel, Force: o.force, Progress: g.progress()})
	if err != nil {
		return err
	}
	if g.json {
		return g.printJSON(res)
	}
	for _, f := range res.Files {
		if f.Status == "up-to-date" {
			g.say("up to date %s\n", f.Path)
			continue
		}
		g.say("wrote      %s  (%s; %d chunks reused, %d fetched = %s)\n", f.Path, humanBytes(f.Size), f.ChunksReused, f.ChunksFetched, humanBytes(f.BytesFetched))
	}
	return nil
}
