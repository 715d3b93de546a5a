package main

import (
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chunkvc/chunkvc/repo"
)

type cloneOptions struct {
	lazy       bool
	branch     string
	trustStore bool
}

func newCloneCmd(g *globalOptions) *cobra.Command {
	var o cloneOptions
	c := &cobra.Command{
		Use:   "clone URL [DIR]",
		Short: "Clone a chunkvc repository and materialise its files",
		Long: `Clone the Git repository at URL into DIR and write every tracked file,
downloading chunks from the store named in the committed .chunkvc/config
(credentials come from the usual AWS/MinIO environment and profile files).
With --lazy only the manifests arrive; chunkvc checkout fetches files later.
A clone of a local repository that uses its embedded store reads that store.
The branch checked out is --branch, else the one the remote's HEAD names;
when that names a branch the remote lacks (a bare repository whose HEAD
says master while only main was pushed), chunkvc takes the remote's only
branch, or main, or master, and says so.

A store the committed config names that is a local directory outside the
repository is not read until you trust it (see chunkvc store --help):
without --trust-store such a clone gets its manifests only, and exits with
status 4 saying what to run; a --lazy clone exits 0 and says the same
(--json: "store_trusted": false).`,
		Args: argsUsage(cobra.RangeArgs(1, 2)),
		RunE: func(c *cobra.Command, args []string) error {
			url := args[0]
			dir := strings.TrimSuffix(filepath.Base(strings.TrimSuffix(url, "/")), ".git")
			if len(args) == 2 {
				dir = args[1]
			}
			if wd, err := g.workDir(); err == nil && !filepath.IsAbs(dir) {
				dir = filepath.Join(wd, dir)
			}
			r, res, err := repo.Clone(c.Context(), repo.CloneOptions{URL: url, Dir: dir, Lazy: o.lazy, Branch: o.branch,
				TrustStore: o.trustStore, Native: nativeAdapters(), Progress: g.progress()})
			if err != nil {
				return err
			}
			trusted := r.StoreInfo().Trusted
			if g.json {
				return g.printJSON(map[string]any{"root": r.Root, "store": r.Store.String(), "store_trusted": trusted,
					"lazy": o.lazy, "branch": res.Branch, "branch_chosen": res.BranchChosen, "checkout": res.Checkout})
			}
			if res.BranchChosen {
				g.say("The remote's HEAD names no branch it has; checked out %s\n", res.Branch)
			}
			g.say("Cloned into %s (branch %s, store: %s)\n", r.Root, res.Branch, r.Store)
			if !trusted {
				// Only a lazy clone gets here with an untrusted store (a
				// full clone fails with ErrUntrustedStore): say it now,
				// not at the first checkout.
				g.say("The store is a directory outside the repository that came with the clone; nothing is read\n"+
					"from or written to it until you run `chunkvc -C %s store trust`\n", r.Root)
			}
			if co := res.Checkout; co != nil {
				var fetched int64
				for _, f := range co.Files {
					fetched += f.BytesFetched
				}
				g.say("%d files written, %s downloaded\n", len(co.Files), humanBytes(fetched))
			}
			return nil
		},
	}
	c.Flags().BoolVar(&o.lazy, "lazy", false, "fetch manifests only; no chunk is downloaded")
	c.Flags().StringVarP(&o.branch, "branch", "b", "", "check out this branch rather than the remote's HEAD")
	c.Flags().BoolVar(&o.trustStore, "trust-store", false, "trust the local store outside the repository that the clone's .chunkvc/config names")
	addJSON(c, g)
	return c
}
