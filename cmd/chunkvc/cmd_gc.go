package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/chunkvc/chunkvc/repo"
)

type gcOptions struct {
	dryRun  bool
	grace   time.Duration
	stores  []string
	noFetch bool
	force   bool
	expire  string
	expTags bool
}

func newGCCmd(g *globalOptions) *cobra.Command {
	var o gcOptions
	c := &cobra.Command{
		Use:   "gc",
		Short: "Delete chunks that no reachable commit references",
		Long: `Delete stored objects (chunks and layouts) that no commit reachable from any
branch, tag or remote-tracking ref references, nor any commit a reflog entry
younger than the grace period names. Objects younger than the grace period
are kept too: they may belong to a commit still in flight in another clone
that shares the store. Before collecting a shared store every Git remote is
fetched, so commits others pushed keep their chunks. A pack that holds
garbage is rewritten without it; a kept chunk that was stored as a delta
against a deleted one is re-encoded first, and a local store's small packs
(one per commit) are merged into one. What interrupted commits left (temp
files, packs without an index, uploads never completed) is removed once it
is older than the grace period too. Run with --dry-run first.

A store may be shared by several repositories (init --store with the same
path or bucket). Each records itself in the store's registry at every
commit, push and gc, with where its Git lives and its tips; gc keeps every
chunk any of them references, reading their Git where their work tree is
readable from here, or their tips where this repository has fetched them.
When it can do neither for some repository, gc deletes nothing and names
it: push and fetch its commits, or, if it no longer exists, retire it with
"chunkvc store forget ID" ("chunkvc store repos" lists the registry). On a
store other repositories use, a --grace below 1h needs --force: a commit in
flight elsewhere is protected by the grace period only.

With --expire WINDOW (30d, 12h, 2w; or "retention = 30d" in .chunkvc/config,
which a plain gc applies; --expire none skips it) gc also deletes the chunks
that only commits older than the window use: it keeps every branch and
remote-tracking ref's commit, every tag's (unless --expire-tags), and every
commit committed within the window, whatever else they share with older
ones. The manifests stay in Git: log, diff and digests still show what the
expired versions were. gc records each expiry (its date, window and cut) in
the store's named/expired/ folder, so a checkout or cat of an expired
version, from any clone reading that store, fails with exit status 6 and
says when and why. The grace period still applies: objects younger than
it, which a commit in flight may reuse, are kept.

Exit status 4: gc refused (repositories it cannot account for, or a grace
period below 1h on a shared store without --force).`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(c *cobra.Command, args []string) error {
			if o.grace < 0 {
				return usageError{fmt.Errorf("--grace must not be negative")}
			}
			if o.expire != "" && o.expire != "none" {
				if _, err := repo.ParseRetention(o.expire); err != nil {
					return usageError{fmt.Errorf("--expire: %w", err)}
				}
			}
			r, err := g.open()
			if err != nil {
				return err
			}
			res, err := r.GC(c.Context(), repo.GCOptions{DryRun: o.dryRun, Grace: o.grace, Stores: o.stores, NoFetch: o.noFetch, Force: o.force,
				Expire: o.expire, ExpireTags: o.expTags})
			if err != nil {
				return err
			}
			if g.json {
				return g.printJSON(res)
			}
			verb := "deleted"
			if o.dryRun {
				verb = "would delete"
			}
			printExpiry(g, res.Expire, o.dryRun)
			if res.OtherRepos > 0 {
				fmt.Fprintf(g.stdout, "kept the chunks of %d other repositories registered in the store\n", res.OtherRepos)
			}
			for _, s := range res.Stores {
				fmt.Fprintf(g.stdout, "%s: %d objects, %d referenced, %d within the grace period, %s %d (%s)",
					s.Store, s.Objects, s.Kept, s.Young, verb, s.Deleted, humanBytes(s.BytesDeleted))
				if s.Debris > 0 {
					fmt.Fprintf(g.stdout, "; %s %d leftovers of interrupted writes (%s)", verb, s.Debris, humanBytes(s.DebrisBytes))
				}
				if s.PacksMerged > 0 {
					fmt.Fprintf(g.stdout, "; merged %d small packs into one", s.PacksMerged)
				}
				fmt.Fprintln(g.stdout)
			}
			return nil
		},
	}
	c.Flags().BoolVarP(&o.dryRun, "dry-run", "n", false, "only report what would be deleted")
	c.Flags().DurationVar(&o.grace, "grace", 7*24*time.Hour, "keep objects and reflog entries younger than this")
	c.Flags().BoolVar(&o.noFetch, "no-fetch", false, "do not fetch every Git remote before collecting a shared store")
	c.Flags().BoolVar(&o.force, "force", false, "allow a --grace below 1h on a store other repositories use")
	c.Flags().StringVar(&o.expire, "expire", "", `delete the chunks only commits older than this window use (30d, 12h, 2w; "none": ignore the configured retention)`)
	c.Flags().BoolVar(&o.expTags, "expire-tags", false, "with --expire, let tagged commits expire too")
	c.Flags().StringSliceVar(&o.stores, "stores", nil, "which stores to collect: remote, local, cache (default all)")
	addJSON(c, g)
	return c
}

// printExpiry reports a retention window's cut; with dryRun, every
// commit that would expire.
func printExpiry(g *globalOptions, e *repo.GCExpire, dryRun bool) {
	if e == nil {
		return
	}
	verb := "expired"
	if dryRun {
		verb = "would expire"
	}
	fmt.Fprintf(g.stdout, "retention %s: cut at %s; %s %d commits, kept %d\n",
		e.Window, e.Cut.Format("2006-01-02 15:04 MST"), verb, e.CommitsExpired, e.CommitsKept)
	if dryRun {
		for _, c := range e.Commits {
			fmt.Fprintf(g.stdout, "  %s %s %s\n", c.Commit[:10], c.Date.Format("2006-01-02"), c.Subject)
		}
	}
}
