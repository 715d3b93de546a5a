package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/chunkvc/chunkvc/repo"
)

type logOptions struct {
	max int
}

func newLogCmd(g *globalOptions) *cobra.Command {
	var o logOptions
	c := &cobra.Command{
		Use:   "log [REV]",
		Short: "Show commits and the data files each one changed",
		Long: `Show the commits of REV (default HEAD) along first parents, newest first,
with the data files each one added, modified or deleted: chunk counts and
the bytes the commit stored. A file deleted and another added that holds
at least half of its chunk bytes (a partition rewritten under a new name)
is one "rewritten OLD → NEW" entry, its figures counted against the old
file, as diff pairs them. --json prints {"commits": [...]} (fields in the
README).`,
		Args: argsUsage(cobra.MaximumNArgs(1)),
		RunE: func(c *cobra.Command, args []string) error { return runLog(g, o, optArg(args)) },
	}
	c.Flags().IntVarP(&o.max, "max-count", "n", 0, "show at most `N` commits")
	addJSON(c, g)
	return c
}

func runLog(g *globalOptions, o logOptions, rev string) error {
	r, err := g.open()
	if err != nil {
		return err
	}
	entries, err := r.Log(rev, o.max)
	if err != nil {
		return err
	}
	if g.json {
		return g.printJSON(map[string]any{"commits": entries})
	}
	for i, e := range entries {
		if i > 0 {
			fmt.Fprintln(g.stdout)
		}
		fmt.Fprintf(g.stdout, "commit %s\nAuthor: %s <%s>\nDate:   %s\n\n    %s\n", e.Commit, e.Author, e.Email, e.Date.Format("Mon Jan 2 15:04:05 2006 -0700"), e.Message)
		if len(e.Files) > 0 {
			fmt.Fprintln(g.stdout)
		}
		for _, f := range e.Files {
			switch f.Status {
			case repo.FileDeleted:
				fmt.Fprintf(g.stdout, "    deleted   %s\n", f.Path)
				continue
			case repo.FileRewritten:
				fmt.Fprintf(g.stdout, "    rewritten %s → %s  (%s, %s; %s shared; %s new)\n", f.OldPath, f.Path, f.Format, humanBytes(f.Size),
					humanBytes(f.SharedBytes), humanBytes(f.NewBytes))
				continue
			}
			fmt.Fprintf(g.stdout, "    %-9s %s  (%s, %s; chunks +%d -%d ~%d =%d; %s new)\n", f.Status, f.Path, f.Format, humanBytes(f.Size),
				f.Added, f.Removed, f.Changed, f.Unchanged, humanBytes(f.NewBytes))
		}
	}
	return nil
}
