package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chunkvc/chunkvc/repo"
)

// globalOptions are the flags every command has, and the output streams.
type globalOptions struct {
	dir   string
	quiet bool
	json  bool
	// progressMode is --progress: auto (a bar on a terminal), plain,
	// json or none.
	progressMode string
	stdout       io.Writer
	stderr       io.Writer
}

func newRootCmd(g *globalOptions) *cobra.Command {
	root := &cobra.Command{
		Use:   "chunkvc",
		Short: "Version the insides of big geospatial files with Git",
		Long: `chunkvc versions big geospatial files the way Git versions source. COG tiles,
Parquet column chunks and FlatGeobuf feature blocks are hashed with BLAKE3 and
stored once in a content-addressed store; Git holds one small, sorted text
manifest per file, so a one-tile edit costs one tile of upload and one line
of diff.

` + exitHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	root.PersistentFlags().StringVarP(&g.dir, "directory", "C", "", "run as if chunkvc was started in `DIR`")
	root.PersistentFlags().BoolVarP(&g.quiet, "quiet", "q", false, "no progress or chatter on stderr")
	root.PersistentFlags().StringVar(&g.progressMode, "progress", "auto", "progress on stderr: auto (a bar on a terminal), plain (a line a second, for CI logs), json (newline-delimited events) or none")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w (see %s --help)", err, c.CommandPath())}
	})
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		switch g.progressMode {
		case "auto", "plain", "json", "none":
			return nil
		}
		return usageError{fmt.Errorf("--progress must be auto, plain, json or none, not %q", g.progressMode)}
	}
	root.SetOut(g.stdout)
	root.SetErr(g.stderr)
	root.AddCommand(
		newInitCmd(g),
		newTrackCmd(g),
		newStatusCmd(g),
		newCommitCmd(g),
		newCheckoutCmd(g),
		newLogCmd(g),
		newLsChunksCmd(g),
		newLsFilesCmd(g),
		newCatCmd(g),
		newFsckCmd(g),
		newCheckCmd(g),
		newMergeCmd(g),
		newResolveCmd(g),
		newPushCmd(g),
		newPrePushCmd(g),
		newCloneCmd(g),
		newFetchCmd(g),
		newPullCmd(g),
		newInstallCmd(g),
		newGCCmd(g),
		newNormalizeCmd(g),
		newDiffCmd(g),
		newDiffTextconvCmd(g),
		newMergeDriverCmd(g),
		newMergeOverviewsCmd(g),
		newServeCmd(g),
		newStoreCmd(g),
	)
	return root
}

// version is set by the Makefile through -ldflags.
var version = "dev"

// addJSON adds --json to a command that reports numbers.
func addJSON(c *cobra.Command, g *globalOptions) {
	c.Flags().BoolVar(&g.json, "json", false, "print one JSON object on stdout")
}

// workDir is where the command acts: -C, else the current directory.
func (g *globalOptions) workDir() (string, error) {
	if g.dir != "" {
		return filepath.Abs(g.dir)
	}
	return os.Getwd()
}

// open opens the repository around the working directory.
func (g *globalOptions) open() (*repo.Repo, error) {
	d, err := g.workDir()
	if err != nil {
		return nil, err
	}
	return repo.Open(d, nativeAdapters())
}

// relPaths turns command-line paths (relative to the working directory)
// into slash paths relative to the repository root.
func (g *globalOptions) relPaths(r *repo.Repo, args []string) ([]string, error) {
	wd, err := g.workDir()
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(args))
	for _, a := range args {
		p := a
		if !filepath.IsAbs(p) {
			p = filepath.Join(wd, p)
		}
		rel, err := filepath.Rel(r.Root, p)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return nil, usageError{fmt.Errorf("%s is outside the repository %s", a, r.Root)}
		}
		out = append(out, filepath.ToSlash(rel))
	}
	return out, nil
}

// argsUsage wraps one of cobra's argument validators so that bad
// arguments exit with 2.
func argsUsage(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if err := v(c, args); err != nil {
			return usageError{fmt.Errorf("%w (see chunkvc %s --help)", err, c.Name())}
		}
		return nil
	}
}

// optArg returns the one optional positional argument, or "".
func optArg(args []string) string {
	if len(args) == 1 {
		return args[0]
	}
	return ""
}
