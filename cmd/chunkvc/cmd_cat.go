package main

import (
	"bufio"

	"github.com/spf13/cobra"

	"github.com/chunkvc/chunkvc/repo"
)

func newCatCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "cat REV:PATH",
		Short: "Write a file's bytes at REV to stdout, verified",
		Long: `Write the bytes of a tracked file as committed at REV to stdout. Like git
cat-file, cat writes nothing of a file it cannot give whole: before the first
byte it reads the layout and confirms that every chunk is stored, at its
length. Every chunk is then verified by hash as it is written, and the whole
file against its digest; on a mismatch chunkvc exits with status 3, and
stdout holds a prefix of the file (damaged bytes show only when read).`,
		Args: argsUsage(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			r, err := g.open()
			if err != nil {
				return err
			}
			rev, p := repo.SplitRevPath(args[0])
			if rev == "" {
				rel, err := g.relPaths(r, []string{p})
				if err != nil {
					return err
				}
				p = rel[0]
			}
			w := bufio.NewWriterSize(g.stdout, 1<<20)
			if _, err := r.Cat(c.Context(), rev, p, w); err != nil {
				_ = w.Flush() // what came before the failure; err says why it stopped
				return err
			}
			return w.Flush()
		},
	}
}
