package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/chunkvc/chunkvc/repo"
)

const storeHelp = `.chunkvc/config is committed, so its store line arrives with every clone,
pull and merge. A store it names that is a local directory outside the
repository (an absolute path, a relative one leaving the work tree, a
file:// URL; symlinks resolved) is not used, not even created, until you
trust it: commands that need it stop with exit status 4. The embedded
store, directories inside the work tree and s3:// URLs need no trust;
other directories inside .git are never trusted.

Trust is kept in .git/config, which is never committed or cloned:
  chunkvc.trustedStore  a trusted directory (chunkvc store trust adds it;
                        chunkvc init --store adds the one you name)
  chunkvc.store         this clone's own store, used instead of the
                        committed one (set it with git config)
A trusted directory stays trusted only for that directory: a later
.chunkvc/config naming another is untrusted again.`

func newStoreCmd(g *globalOptions) *cobra.Command {
	c := &cobra.Command{
		Use:   "store",
		Short: "Show the chunk store, trust it, and list or forget its repositories",
		Long: `Show the chunk store the repository uses: its URL, where that comes from
(default, config: the committed .chunkvc/config, git-config: chunkvc.store
in .git/config), the local directory it resolves to, and whether it is
trusted. Its subcommands trust the store (trust), list the repositories
registered in it (repos) and retire one from that registry (forget).

` + storeHelp,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(c *cobra.Command, args []string) error { return runStore(g) },
	}
	addJSON(c, g)
	c.AddCommand(newStoreTrustCmd(g), newStoreReposCmd(g), newStoreForgetCmd(g))
	return c
}

func runStore(g *globalOptions) error {
	r, err := g.open()
	if err != nil {
		return err
	}
	return printStoreInfo(g, r.StoreInfo())
}

func newStoreTrustCmd(g *globalOptions) *cobra.Command {
	c := &cobra.Command{
		Use:   "trust",
		Short: "Trust the local store outside the repository that .chunkvc/config names",
		Long: `Record in .git/config that this clone may use the local directory that the
store line of .chunkvc/config names, after you have checked it is the one
you expect. Then run again what was refused (after a clone: chunkvc
checkout).

` + storeHelp,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(c *cobra.Command, args []string) error { return runStoreTrust(g) },
	}
	addJSON(c, g)
	return c
}

func runStoreTrust(g *globalOptions) error {
	r, err := g.open()
	if err != nil {
		return err
	}
	was := r.StoreInfo().Trusted
	info, err := r.TrustStore()
	if err != nil {
		return err
	}
	if !was {
		g.say("Trusted store %s (%s), recorded in .git/config\n", info.URL, info.Path)
	}
	return printStoreInfo(g, info)
}

func printStoreInfo(g *globalOptions, info repo.StoreInfo) error {
	if g.json {
		return g.printJSON(info)
	}
	url := info.URL
	if url == "" {
		url = "(embedded)"
	}
	fmt.Fprintf(g.stdout, "store:   %s\nsource:  %s\n", url, info.Source)
	if info.Path != "" {
		where := "inside the repository"
		if info.Outside {
			where = "outside the repository"
		}
		fmt.Fprintf(g.stdout, "path:    %s (%s)\n", info.Path, where)
	}
	trusted := "yes"
	if !info.Trusted {
		trusted = "no (chunkvc store trust)"
	}
	fmt.Fprintf(g.stdout, "trusted: %s\n", trusted)
	return nil
}
