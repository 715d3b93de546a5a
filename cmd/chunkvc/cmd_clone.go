package main

import (
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chunkvc/chunkvc/repo"
)

type cloneOptions struct {
	lazy bool
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
A clone of a local repository that uses its embedded store reads that store.`,
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
			r, co, err := repo.Clone(c.Context(), url, dir, o.lazy, nativeAdapters(), g.progress())
			if err != nil {
				return err
			}
			if g.json {
				return g.printJSON(map[string]any{"root": r.Root, "store": r.Store.String(), "lazy": o.lazy, "checkout": co})
			}
			g.say("Cloned into %s (store: %s)\n", r.Root, r.Store)
			if co != nil {
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
	addJSON(c, g)
	return c
}

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
			remote := ""
			if len(args) == 1 {
				remote = args[0]
			}
			res, err := r.Fetch(c.Context(), remote)
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

func newPullCmd(g *globalOptions) *cobra.Command {
	c := &cobra.Command{
		Use:   "pull [REMOTE]",
		Short: "Fast-forward from REMOTE and check out what changed",
		Long: `Fetch from REMOTE (default origin), fast-forward the current branch, and
write the tracked files that changed, downloading only the chunks that no
working file or cache already holds.`,
		Args: argsUsage(cobra.MaximumNArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			r, err := g.open()
			if err != nil {
				return err
			}
			remote := ""
			if len(args) == 1 {
				remote = args[0]
			}
			co, err := r.Pull(c.Context(), remote, g.progress())
			if err != nil {
				return err
			}
			if g.json {
				return g.printJSON(co)
			}
			for _, f := range co.Files {
				if f.Status == "written" {
					g.say("wrote      %s  (%d chunks reused, %d fetched = %s)\n", f.Path, f.ChunksReused+f.ChunksLocal, f.ChunksFetched, humanBytes(f.BytesFetched))
				}
			}
			return nil
		},
	}
	addJSON(c, g)
	return c
}
