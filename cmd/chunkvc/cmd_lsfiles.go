package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newLsFilesCmd(g *globalOptions) *cobra.Command {
	c := &cobra.Command{
		Use:   "ls-files [REV]",
		Short: "List the files a revision tracks, with digests and last change",
		Long: `List the data files (and datasets) tracked at REV (default HEAD), in path
order: size, format, the BLAKE3 digest of the whole file (of a dataset, its
dataset digest) and the commit that last changed it, on the first-parent
line from REV. Only manifest headers are read, so it is cheap on large
datasets; history is walked only until every file's last change is found.

--json prints {"commit": ..., "files": [{path, size, digest, format,
chunks, commit, date}]}: an auditor's table of contents of a revision.`,
		Args: argsUsage(cobra.MaximumNArgs(1)),
		RunE: func(c *cobra.Command, args []string) error { return runLsFiles(g, optArg(args)) },
	}
	addJSON(c, g)
	return c
}

func runLsFiles(g *globalOptions, rev string) error {
	r, err := g.open()
	if err != nil {
		return err
	}
	snap, err := r.Snapshot(rev)
	if err != nil {
		return err
	}
	files, err := r.ListFiles(snap.Commit())
	if err != nil {
		return err
	}
	if g.json {
		return g.printJSON(map[string]any{"commit": snap.Commit(), "files": files})
	}
	for _, f := range files {
		fmt.Fprintf(g.stdout, "%s %10s %-10s %s %s\n", f.Commit[:10], humanBytes(f.Size), f.Format, f.Digest[:min(len(f.Digest), 20)], f.Path)
	}
	return nil
}
