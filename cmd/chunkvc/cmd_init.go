package main

import (
	"github.com/spf13/cobra"

	"github.com/chunkvc/chunkvc/repo"
)

type initOptions struct {
	store string
}

func newInitCmd(g *globalOptions) *cobra.Command {
	var o initOptions
	c := &cobra.Command{
		Use:   "init [DIR]",
		Short: "Make a Git repository (or a new one) a chunkvc repository",
		Long: `Make the Git repository at DIR (default: the current directory) a chunkvc
repository, creating the Git repository if there is none. Writes and stages
.chunkvc/config; the next commit records it.

Without --store, chunks go to the embedded store in .git/chunkvc/store. A
path (absolute, or relative to the repository root) or file:// URL names a
shared local store, e.g. on an NFS mount; one outside the repository is
recorded as trusted in .git/config (see chunkvc store --help), as clones
must trust it themselves.`,
		Args: argsUsage(cobra.MaximumNArgs(1)),
		RunE: func(c *cobra.Command, args []string) error { return runInit(g, o, args) },
	}
	c.Flags().StringVar(&o.store, "store", "", "chunk store `URL` (default: embedded .git/chunkvc/store)")
	addJSON(c, g)
	return c
}

func runInit(g *globalOptions, o initOptions, args []string) error {
	dir, err := g.workDir()
	if err != nil {
		return err
	}
	if len(args) == 1 {
		dir = args[0]
		if g.dir != "" {
			dir = g.dir + "/" + args[0]
		}
	}
	r, err := repo.Init(dir, o.store, nativeAdapters())
	if err != nil {
		return err
	}
	if g.json {
		return g.printJSON(map[string]string{"root": r.Root, "store": r.Store.String()})
	}
	g.say("Initialized chunkvc repository in %s (store: %s)\n", r.Root, r.Store)
	return nil
}
