package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/chunkvc/chunkvc/internal/diffview"
	"github.com/chunkvc/chunkvc/repo"
)

func newStatusCmd(g *globalOptions) *cobra.Command {
	var exitCodeFlag bool
	c := &cobra.Command{
		Use:   "status",
		Short: "Show tracked files that are added, modified or deleted versus HEAD",
		Long: `Show tracked files that are added, modified or deleted versus HEAD.
Files whose size, mtime, ctime and inode match the stat cache are not read.
A tracked file whose name a manifest cannot hold (a line break, tab or other
control character, a backslash, not UTF-8) is shown as refused, its name
quoted: commit leaves it out until it is renamed.

Other states: "partial" (written by checkout --bbox), "not-checked-out"
(committed, missing because a checkout did not write it: commit does not
take it for deleted; chunkvc checkout writes it), and "conflict" (a merge
stopped on it: the merge driver's lines, key, bbox and reason, follow).

A tracked dataset (a Zarr store) is one entry; when modified, one line per
changed array follows it ("t2m: 5 of 16000 chunks changed ...", and
"arrays" in --json). Only the store's files whose stat changed are read.

With --exit-code, status exits 1 when anything differs from HEAD (after
printing it), 0 when the tracked files match, as git diff --exit-code.`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(c *cobra.Command, args []string) error { return runStatus(g, c, exitCodeFlag) },
	}
	c.Flags().BoolVar(&exitCodeFlag, "exit-code", false, "exit 1 when tracked files differ from HEAD")
	addJSON(c, g)
	return c
}

func runStatus(g *globalOptions, c *cobra.Command, exitCode bool) error {
	r, err := g.open()
	if err != nil {
		return err
	}
	entries, err := r.Status(c.Context())
	if err != nil {
		return err
	}
	var changed error
	if exitCode && len(entries) > 0 {
		changed = silentError{errDifferences}
	}
	if g.json {
		if err := g.printJSON(map[string]any{"branch": r.Branch(), "files": entries, "clean": len(entries) == 0}); err != nil {
			return err
		}
		return changed
	}
	if len(entries) == 0 {
		g.say("On branch %s: tracked files match HEAD\n", r.Branch())
		return nil
	}
	for _, e := range entries {
		if e.Status == repo.FileRefused {
			// Quoted: the name has a line break or another control character.
			fmt.Fprintf(g.stdout, "%-9s %q  (%s)\n", e.Status, e.Path, e.Reason)
			continue
		}
		fmt.Fprintf(g.stdout, "%-9s %s\n", e.Status, e.Path)
		for _, a := range e.Arrays {
			fmt.Fprintf(g.stdout, "          %s\n", diffview.ArrayLine(a))
		}
		for _, l := range e.Conflicts {
			fmt.Fprintf(g.stdout, "          %s\n", l)
		}
	}
	return changed
}
