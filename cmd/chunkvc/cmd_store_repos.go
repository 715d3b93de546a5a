package main

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/chunkvc/chunkvc/repo"
)

// newStoreReposCmd is "store repos": the registry of the repositories that
// keep chunks in the configured store.
func newStoreReposCmd(g *globalOptions) *cobra.Command {
	c := &cobra.Command{
		Use:   "repos",
		Short: "List the repositories registered in the store (gc keeps their chunks)",
		Long: `List the repositories that keep chunks in the configured store, from the
store's registry: each repository records there, at every commit, push and
gc, its id (made once, in .git/chunkvc/id; every clone and every copy has its
own), its host and work tree, its remotes and its tips. gc in any of them
keeps the chunks all of them reference, and refuses to run while it cannot
read some repository's commits.

KNOWN says how gc here accounts for each: "this" repository; "readable",
its Git is at the recorded work tree; "fetched", every recorded tip is in
this repository's Git; "unknown", gc refuses until its commits are pushed
and fetched here, or it is retired with "chunkvc store forget ID".
This repository is recorded first.`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(c *cobra.Command, args []string) error {
			r, err := g.open()
			if err != nil {
				return err
			}
			list, err := r.StoreRepos(c.Context())
			if err != nil {
				return err
			}
			if g.json {
				return g.printJSON(struct {
					Store string            `json:"store"`
					Repos []repo.RepoStatus `json:"repos"`
				}{r.Store.String(), list})
			}
			for _, e := range list {
				fmt.Fprintf(g.stdout, "%s\t%s\t%s\t%s:%s\t%s\n", e.ID, e.Known, e.Updated.Format(time.RFC3339), e.Host, e.Root, tipsLine(e.Tips))
			}
			return nil
		},
	}
	addJSON(c, g)
	return c
}

// tipsLine lists branch=commit pairs briefly.
func tipsLine(tips map[string]string) string {
	var out []string
	for ref, h := range tips {
		if len(h) > 10 {
			h = h[:10]
		}
		out = append(out, strings.TrimPrefix(ref, "refs/heads/")+"="+h)
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// newStoreForgetCmd is "store forget": retire repositories from the
// store's registry.
func newStoreForgetCmd(g *globalOptions) *cobra.Command {
	c := &cobra.Command{
		Use:   "forget ID...",
		Short: "Retire repositories that no longer exist from the store's registry",
		Long: `Remove repositories from the configured store's registry ("chunkvc store
repos" lists it; an ID may be shortened to 6 or more digits if unique). gc
then no longer keeps the chunks only they reference, nor refuses because it
cannot read their commits. Forget only repositories that are gone, or whose
unpushed commits you accept to lose (the next gc may delete their chunks);
a repository that still exists records itself again at its next commit,
push or gc. This repository cannot be forgotten.`,
		Args: argsUsage(cobra.MinimumNArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			r, err := g.open()
			if err != nil {
				return err
			}
			ids, err := r.ForgetRepos(c.Context(), args)
			if errors.Is(err, repo.ErrNoSuchRepo) {
				return usageError{err}
			}
			if err != nil {
				return err
			}
			if g.json {
				return g.printJSON(struct {
					Forgotten []string `json:"forgotten"`
				}{ids})
			}
			for _, id := range ids {
				g.say("forgot %s\n", id)
			}
			return nil
		},
	}
	addJSON(c, g)
	return c
}
