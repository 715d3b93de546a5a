package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/chunkvc/chunkvc/repo"
)

type fsckOptions struct {
	verify   string
	remote   bool
	repair   bool
	worktree bool
}

func newFsckCmd(g *globalOptions) *cobra.Command {
	var o fsckOptions
	c := &cobra.Command{
		Use:   "fsck",
		Short: "Verify every manifest, layout and chunk reachable from any ref",
		Long: `Verify every manifest reachable from any branch, tag or HEAD: it decodes, its
layout blob is stored and agrees with it, and every chunk is in the store
with the right size. With --verify=full every chunk is read back and
re-hashed. Problems name the commit, file, chunk key and hash; chunkvc then
exits with status 3. If the store cannot be reached (no answer after
retries), fsck stops, checks nothing more and exits with status 5: that
says nothing of the chunks, which may all be there.

With --worktree, fsck checks the work tree instead: every file (and
dataset) HEAD tracks is read whole and re-hashed, ignoring the stat
cache, and compared with the digest HEAD's manifest records; files that
differ or are missing are listed and chunkvc exits with status 3. Files
checked out with --bbox are skipped (partial by design). --json prints
{"ok", "files": [{path, status (ok/differs/missing/skipped), committed,
digest}]}.`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(c *cobra.Command, args []string) error {
			full := false
			switch o.verify {
			case "size":
			case "full":
				full = true
			default:
				return usageError{fmt.Errorf("--verify must be size or full, not %q", o.verify)}
			}
			r, err := g.open()
			if err != nil {
				return err
			}
			if o.worktree {
				return runFsckWorktree(g, c, r)
			}
			res, err := r.Fsck(c.Context(), repo.FsckOptions{Full: full, Remote: o.remote, Repair: o.repair, Progress: g.progress()})
			if err != nil {
				return err
			}
			if g.json {
				if err := g.printJSON(map[string]any{"ok": len(res.Problems) == 0, "commits": res.Commits, "manifests": res.Manifests,
					"chunks": res.Chunks, "bytes": res.Bytes, "repaired": res.Repaired, "problems": res.Problems}); err != nil {
					return err
				}
			} else {
				for _, p := range res.Problems {
					fmt.Fprintf(g.stdout, "problem: commit %.12s %s chunk %s %s: %s\n", p.Commit, p.Path, p.Key, p.Hash, p.Error)
				}
				g.say("checked %d commits, %d manifests, %d chunks (%s): %d repaired, %d problems\n", res.Commits, res.Manifests, res.Chunks, humanBytes(res.Bytes), res.Repaired, len(res.Problems))
			}
			if len(res.Problems) > 0 {
				return silentError{fmt.Errorf("fsck: %d %w", len(res.Problems), errProblems)}
			}
			return nil
		},
	}
	c.Flags().StringVar(&o.verify, "verify", "size", "size (stat every chunk) or full (read and re-hash every chunk)")
	c.Flags().BoolVar(&o.repair, "repair", false, "replace missing or corrupt chunks of the configured store with verified copies from another store (embedded store, alternates, read cache)")
	c.Flags().BoolVar(&o.worktree, "worktree", false, "re-hash the work tree's tracked files, ignoring the stat cache, against HEAD's digests")
	c.Flags().BoolVar(&o.remote, "remote", false, "require every chunk in the configured store (chunks of unpushed offline commits count as missing)")
	addJSON(c, g)
	return c
}

func runFsckWorktree(g *globalOptions, c *cobra.Command, r *repo.Repo) error {
	files, err := r.FsckWorktree(c.Context(), g.progress())
	if err != nil {
		return err
	}
	bad := 0
	for _, f := range files {
		if f.Status == repo.WorktreeDiffers || f.Status == repo.WorktreeMissing {
			bad++
		}
	}
	if g.json {
		if err := g.printJSON(map[string]any{"ok": bad == 0, "files": files}); err != nil {
			return err
		}
	} else {
		for _, f := range files {
			if f.Status != repo.WorktreeOK {
				fmt.Fprintf(g.stdout, "%-8s %s\n", f.Status, f.Path)
			}
		}
		g.say("re-hashed %d tracked files against HEAD: %d differ or are missing\n", len(files), bad)
	}
	if bad > 0 {
		return silentError{fmt.Errorf("fsck --worktree: %d %w", bad, errProblems)}
	}
	return nil
}
