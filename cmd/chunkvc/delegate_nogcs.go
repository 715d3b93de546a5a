//go:build !gcs

package main

import (
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/chunkvc/chunkvc/repo"
)

// delegatedEnv marks a process chunkvc handed a command to, so that a
// chunkvc-gcs that is in fact a build without the tag (or a chunkvc-gdal
// without it handing a command back) reports ErrNeedsGCS instead of
// handing the command on forever.
const delegatedEnv = "CHUNKVC_GCS_DELEGATED"

// runsHere are the commands that, in a repository on gs://, this binary
// runs itself: they never read the store (status, for one, must stay as
// fast as git status there too).
var runsHere = []string{"status", "log", "ls-files", "help", "completion"}

// gcsFirst hands the command in args to chunkvc-gcs, the program built
// with the gcs tag, before it runs when it needs a gs:// store: an argument
// names one (init --store gs://…, clone gs://…), or the repository it runs
// in uses one (except runsHere). clone always goes there when chunkvc-gcs
// is installed, as the store it will need is known only once Git has
// cloned. It returns ErrNeedsGCS when the command needs chunkvc-gcs and
// none is installed; on success it does not return.
func gcsFirst(root *cobra.Command, args []string) error {
	c, _, err := root.Find(args[1:])
	if err != nil || len(args) < 2 {
		return nil
	}
	if c.Name() == "clone" {
		if bin := companion("chunkvc-gcs"); bin != "" && os.Getenv(delegatedEnv) == "" {
			execGCS(bin, args)
		}
	}
	if !argNamesGCS(args[1:]) {
		if slices.Contains(runsHere, c.Name()) || c == root {
			return nil
		}
		if u, err := repo.StoreURL(dirArg(args[1:])); err != nil || !repo.IsGCSURL(u) {
			return nil // a broken config: the command reports it
		}
	}
	return handToGCS(args)
}

func handToGCS(args []string) error {
	bin := companion("chunkvc-gcs")
	if bin == "" || os.Getenv(delegatedEnv) != "" {
		return repo.ErrNeedsGCS
	}
	execGCS(bin, args)
	return repo.ErrNeedsGCS // exec failed: not runnable after all
}

func execGCS(bin string, args []string) {
	_ = syscall.Exec(bin, append([]string{bin}, args[1:]...), append(os.Environ(), delegatedEnv+"=1"))
}

// argNamesGCS reports whether an argument or flag value before any "--"
// is a gs:// URL.
func argNamesGCS(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if repo.IsGCSURL(a) || strings.HasPrefix(a, "-") && strings.Contains(a, "=gs://") {
			return true
		}
	}
	return false
}

// dirArg is the value of -C/--directory in args, or "." (cobra has not
// parsed them yet).
func dirArg(args []string) string {
	dir := "."
	for i, a := range args {
		switch {
		case a == "--":
			return dir
		case (a == "-C" || a == "--directory") && i+1 < len(args):
			dir = args[i+1]
		case strings.HasPrefix(a, "--directory="):
			dir = strings.TrimPrefix(a, "--directory=")
		case strings.HasPrefix(a, "-C"):
			dir = strings.TrimPrefix(strings.TrimPrefix(a, "-C"), "=")
		}
	}
	return dir
}
