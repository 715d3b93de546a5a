package main

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chunkvc/chunkvc/repo"
)

type pushOptions struct {
	verify        string
	allowReencode bool
}

func newPushCmd(g *globalOptions) *cobra.Command {
	var o pushOptions
	c := &cobra.Command{
		Use:   "push [REMOTE]",
		Short: "Make sure the store holds every pushed chunk, then push the branch",
		Long: `Check that the configured store holds every chunk and layout referenced by
the commits being pushed (those the remote-tracking branch does not already
have), upload and verify the ones only the embedded store holds (from
commit --offline), and only then push the current branch to REMOTE
(default origin). The Git remote never advances before its chunks are
verified, nor before every pushed commit passes the policies of
.chunkvc/config (append-only, strict-profile, geo-identical, crs), checked
against its parent as commit and chunkvc check do: a violation refuses the
push with exit 4, naming commit, file and rule (--allow-reencode lets
strict-profile pass). The pre-push hook (chunkvc install) applies the same
checks to a plain git push.`,
		Args: argsUsage(cobra.MaximumNArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			v, err := parseVerify(o.verify)
			if err != nil {
				return err
			}
			r, err := g.open()
			if err != nil {
				return err
			}
			res, err := r.Push(c.Context(), repo.PushOptions{Remote: optArg(args), Verify: v, Progress: g.progress(),
				Policy: repo.PolicyOptions{AllowReencode: o.allowReencode}})
			if err != nil {
				return err
			}
			if g.json {
				return g.printJSON(res)
			}
			g.say("%d commits, %d chunks referenced; %d uploaded (%s) to %s\n", res.Commits, res.Chunks, res.ChunksUploaded, humanBytes(res.BytesUploaded), r.Store)
			if res.GitPushed {
				g.say("pushed %s to %s\n", res.Branch, res.Remote)
			} else {
				g.say("%s is up to date on %s\n", res.Branch, res.Remote)
			}
			return nil
		},
	}
	c.Flags().StringVar(&o.verify, "verify", "size", "how uploaded chunks are confirmed: size or full")
	c.Flags().BoolVar(&o.allowReencode, "allow-reencode", false, "let strict-profile pass re-encoded rasters")
	addJSON(c, g)
	return c
}

func parseVerify(s string) (repo.Verify, error) {
	switch s {
	case "size":
		return repo.VerifySize, nil
	case "full":
		return repo.VerifyFull, nil
	}
	return 0, usageError{fmt.Errorf("--verify must be size or full, not %q", s)}
}

// newPrePushCmd is what the pre-push hook installed by `chunkvc install`
// runs: git passes the remote and, on stdin, one line per ref to push.
func newPrePushCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:    "pre-push REMOTE [URL]",
		Short:  "Git pre-push hook: upload and verify chunks before git pushes",
		Hidden: true,
		Args:   argsUsage(cobra.RangeArgs(1, 2)),
		RunE: func(c *cobra.Command, args []string) error {
			r, err := g.open()
			if err != nil {
				return err
			}
			var tips, except []string
			sc := bufio.NewScanner(c.InOrStdin())
			for sc.Scan() {
				f := strings.Fields(sc.Text())
				if len(f) != 4 {
					continue
				}
				tips = append(tips, f[1])
				except = append(except, f[3])
			}
			if len(tips) == 0 {
				return nil
			}
			res, err := r.Push(c.Context(), repo.PushOptions{Remote: args[0], OnlyChunks: true, Tips: tips, Except: except})
			if err != nil {
				return fmt.Errorf("pre-push: %w (git push stopped)", err)
			}
			g.say("chunkvc: %d chunks referenced, %d uploaded to %s\n", res.Chunks, res.ChunksUploaded, r.Store)
			return nil
		},
	}
}
