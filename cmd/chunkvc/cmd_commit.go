package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/chunkvc/chunkvc/repo"
)

type commitOptions struct {
	message string
	verify  string
	workers int
	offline bool
	// ifChanged makes "nothing to commit" a success: a script replaying
	// an edit already applied need not tell that case apart.
	ifChanged bool
	// allowReencode waives strict-profile policies.
	allowReencode bool
}

func newCommitCmd(g *globalOptions) *cobra.Command {
	var o commitOptions
	c := &cobra.Command{
		Use:   "commit -m MSG [PATH...]",
		Short: "Chunk, store and verify tracked files, then commit their manifests",
		Long: `Chunk the tracked files (or only PATHs), hash every chunk, put the chunks the
store does not have yet, verify them, and only then commit the manifests to
Git — together with anything already staged, as git commit does. If any
chunk cannot be stored and verified, no commit is made and HEAD does not move.

Files whose stat matches the stat cache are not re-read. A tracked file whose
name has a line break, tab or other control character (or a backslash, or is
not UTF-8) cannot be named in a manifest: it is left out with a warning, and
listed under "refused" in --json; the others are committed.

A committed file that is missing because a checkout did not write it (see
chunkvc checkout) is not recorded as deleted: it stays as HEAD has it, and
commit says so (--json: "not_checked_out"). Run chunkvc checkout to write
it; to delete such a file, check it out, then remove it and commit.

The policy gates of .chunkvc/config (append-only, strict-profile,
geo-identical, crs; see chunkvc check --help) are applied to what the
commit changes: a refused change fails the commit with exit 4, naming
the file and the rule, and HEAD does not move.

With nothing to commit, commit fails (exit 1) unless --if-changed is
given: it then exits 0 and --json prints {"commit": null, ...}.`,
		RunE: func(c *cobra.Command, args []string) error { return runCommit(g, o, c, args) },
	}
	c.Flags().StringVarP(&o.message, "message", "m", "", "commit `message` (required)")
	c.Flags().StringVar(&o.verify, "verify", "size", "how new chunks are confirmed: size (stat) or full (read back and re-hash)")
	c.Flags().IntVar(&o.workers, "workers", 0, "hashing workers (default: number of CPUs)")
	c.Flags().BoolVar(&o.offline, "offline", false, "write new chunks to .git/chunkvc/store when the store cannot be reached; push uploads them")
	c.Flags().BoolVar(&o.allowReencode, "allow-reencode", false, "let a strict-profile policy pass a raster whose encoding profile changed")
	c.Flags().BoolVar(&o.ifChanged, "if-changed", false, "exit 0 (--json: \"commit\": null) when there is nothing to commit")
	addJSON(c, g)
	return c
}

func runCommit(g *globalOptions, o commitOptions, c *cobra.Command, args []string) error {
	if o.message == "" {
		return usageError{errors.New("a commit message is required (-m MSG)")}
	}
	var v repo.Verify
	switch o.verify {
	case "size":
		v = repo.VerifySize
	case "full":
		v = repo.VerifyFull
	default:
		return usageError{fmt.Errorf("--verify must be size or full, not %q", o.verify)}
	}
	r, err := g.open()
	if err != nil {
		return err
	}
	paths, err := g.relPaths(r, args)
	if err != nil {
		return err
	}
	res, err := r.Commit(c.Context(), repo.CommitOptions{Message: o.message, Paths: paths, Verify: v, Workers: o.workers, Offline: o.offline, Progress: g.progress(), AllowReencode: o.allowReencode})
	if res != nil && !g.json {
		for _, f := range res.Refused {
			fmt.Fprintf(g.stderr, "warning: %q not committed: %s\n", f.Path, f.Reason)
		}
	}
	if errors.Is(err, repo.ErrNothingToCommit) && o.ifChanged {
		if g.json {
			return g.printJSON(map[string]any{"commit": nil, "branch": r.Branch(), "files": []any{}})
		}
		g.say("nothing to commit on %s\n", r.Branch())
		return nil
	}
	if err != nil {
		return err
	}
	if g.json {
		return g.printJSON(res)
	}
	fmt.Fprintf(g.stdout, "[%s %s] %s\n", res.Branch, res.Commit[:7], firstLine(o.message))
	if len(res.NotCheckedOut) > 0 {
		fmt.Fprintf(g.stderr, "note: %s\n", repo.NotCheckedOutNote(res.NotCheckedOut))
	}
	for _, f := range res.Files {
		if f.Status == repo.FileUnchanged {
			continue
		}
		line := fmt.Sprintf(" %-9s %s", f.Status, f.Path)
		if f.Status != repo.FileDeleted {
			line += fmt.Sprintf("  (%s, %s, %d chunks, %d changed, %d new = %s)", f.Format, humanBytes(f.Size), f.Chunks, f.Changed, f.NewChunks, humanBytes(f.NewBytes))
		}
		fmt.Fprintln(g.stdout, line)
		if f.Fallback != "" {
			fmt.Fprintf(g.stderr, "note: %s: chunked generically because %s\n", f.Path, f.Fallback)
		}
		for _, w := range f.Warnings {
			fmt.Fprintf(g.stderr, "warning: %s: %s\n", f.Path, w)
		}
	}
	g.say("%d chunks uploaded (%s) to %s\n", res.ChunksUploaded, humanBytes(res.BytesUploaded), r.Store)
	return nil
}

func firstLine(s string) string {
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	return s
}
