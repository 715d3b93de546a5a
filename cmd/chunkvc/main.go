// Command chunkvc versions the insides of big geospatial files: COG tiles,
// Parquet column chunks and FlatGeobuf feature blocks are stored once in a
// content-addressed store, and Git holds small, reviewable manifests.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/chunkvc/chunkvc/internal/memlimit"
	"github.com/chunkvc/chunkvc/repo"
	"github.com/chunkvc/chunkvc/store"
	"github.com/spf13/cobra"
)

// Exit codes; documented in `chunkvc --help` and the README.
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitIntegrity   = 3
	exitRefused     = 4
	exitUnavailable = 5
	exitExpired     = 6
	exitNeedsGCS    = 7
	exitInterrupt   = 130
)

const exitHelp = `Exit status:
  0    success
  1    failure (including "nothing to commit", unless commit --if-changed);
       status --exit-code: tracked files differ from HEAD
  2    usage error: unknown command, bad flag or argument
  3    integrity problem: fsck found problems, or data failed verification
  4    refused: uncommitted changes would be overwritten, the repository is
       locked (by another chunkvc, or git holds .git/index.lock or a ref's
       .lock), a Git ref is broken or moved meanwhile, a partial (--bbox)
       checkout would be committed, normalize would re-encode unchanged
       tiles, the store .chunkvc/config names is a directory outside the
       repository that is not trusted (chunkvc store trust), or gc cannot
       account for every repository sharing the store (or got a --grace
       below 1h there without --force), or a policy gate of
       .chunkvc/config refuses a change (commit, check)
  5    the store could not be reached (no answer after retries); nothing
       is known of the chunks it holds
  6    expired: checkout or cat of a version whose chunks gc --expire
       deleted (its manifest stays in Git)
  7    the command needs a gs:// store and this chunkvc was built without
       Google Cloud Storage, with no chunkvc-gcs beside it or on PATH
       (nothing was changed, except by a clone: its files are not checked out)
  130  interrupted`

// usageError marks errors in how chunkvc was called.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

func main() {
	delegateToGDAL(os.Args)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	g := &globalOptions{stdout: os.Stdout, stderr: os.Stderr}
	cmd := newRootCmd(g)
	if err := gcsFirst(cmd, os.Args); err != nil {
		os.Exit(exitCode(ctx, g, err))
	}
	if os.Getenv("GOGC") == "" {
		percent, limit := gcSettings(cmd, os.Args[1:])
		debug.SetGCPercent(percent)
		if os.Getenv("GOMEMLIMIT") == "" {
			memlimit.Track(limit)
		}
	}
	stopProfile := startProfile(g)
	err := cmd.ExecuteContext(ctx)
	if err != nil && unknownCommand(cmd, os.Args[1:]) {
		err = usageError{err}
	}
	stopProfile()
	os.Exit(exitCode(ctx, g, err))
}

// unknownCommand reports whether args name no command of root. cobra's
// Find fails then, and only then (its error is the one Execute returned,
// before running anything), and the error has no type of its own to test.
func unknownCommand(root *cobra.Command, args []string) bool {
	_, _, err := root.Find(args)
	return err != nil
}

// gcSettings is the collector's percent and the heap's soft limit for the
// command args name.
//
// The heap is small for most files (pooled buffers, not file-sized ones),
// so collecting at 5× instead of 2× costs a few MB and saves the
// collector's share of a command. commit and status (which hashes files as
// commit does) collect at 9×: the first collection then waits for 32 MB of
// heap, and a re-commit of one changed file, which allocates about 16 MB,
// makes none (at 5× its one collection cost 1-3 ms of its 40, in paired
// runs); a commit of a COG of 131,000 tiles took 0.78 s and 206 MB of peak
// RSS, at 5× 1.11 s and 185 MB, and with no collection before the limit
// 0.77 s and 258 MB.
//
// Their limit: a file's scan plan, manifest and the store's index entries
// take about 350 bytes per chunk at a commit's peak, so a file of 200,000
// tiles has a live heap of 70 MB, which 9× would let grow past the 300 MB
// a commit may take: near 224 MiB (plus the scan's and the pack's buffers,
// outside the heap) the collector runs early again. gc and fsck, which map
// every object of a store, keep 1 GiB rather than collect that often.
// checkout, pull and clone, which write files, get 192 MiB: a checkout
// holds a file's manifest, layout blob and the store's map of its objects,
// about 270 bytes a chunk (a COG of 521,623 tiles: 140 MB of live heap at
// the peak), and the limit keeps one of that size under 300 MB of RSS. The
// other commands get 512 MiB. A command whose live heap outgrows its
// limit gets it raised (memlimit.Track) instead of collecting without end.
func gcSettings(root *cobra.Command, args []string) (percent int, limit int64) {
	c, _, err := root.Find(args)
	switch {
	case err != nil:
		return 400, 224 << 20
	case c.Name() == "commit" || c.Name() == "status":
		return 800, 224 << 20
	case c.Name() == "gc" || c.Name() == "fsck":
		return 400, 1 << 30
	case c.Name() == "checkout" || c.Name() == "pull" || c.Name() == "clone":
		return 400, 192 << 20
	}
	return 400, 512 << 20
}

// exitCode prints err (if any) and maps it to an exit status. Only main
// decides wording and codes.
func exitCode(ctx context.Context, g *globalOptions, err error) int {
	if err == nil {
		return exitOK
	}
	var silent silentError
	if !errors.As(err, &silent) {
		fmt.Fprintf(g.stderr, "chunkvc: %v\n", err)
	}
	var ue usageError
	switch {
	case ctx.Err() != nil:
		return exitInterrupt
	case errors.As(err, &ue):
		return exitUsage
	case errors.Is(err, store.ErrUnavailable):
		return exitUnavailable
	case errors.Is(err, repo.ErrExpired):
		return exitExpired
	case errors.Is(err, repo.ErrNeedsGCS):
		return exitNeedsGCS
	case errors.Is(err, repo.ErrIntegrity), errors.Is(err, store.ErrCorrupt), errors.Is(err, errProblems):
		return exitIntegrity
	case errors.Is(err, repo.ErrLocalChanges), errors.Is(err, repo.ErrLocked), errors.Is(err, repo.ErrGitLocked),
		errors.Is(err, repo.ErrBrokenRef), errors.Is(err, repo.ErrRefLocked), errors.Is(err, repo.ErrRefMoved),
		errors.Is(err, errChurn), errors.Is(err, repo.ErrPartial), errors.Is(err, repo.ErrUntrustedStore),
		errors.Is(err, repo.ErrUnknownRepos), errors.Is(err, repo.ErrShortGrace), errors.Is(err, repo.ErrPolicy):
		return exitRefused
	}
	return exitFailure
}

// silentError has already been reported (e.g. fsck printed its problems).
type silentError struct{ error }

func (e silentError) Unwrap() error { return e.error }

var errProblems = errors.New("problems found")
