package gitdb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
)

// ErrNoGit means the git command is not installed. chunkvc talks to Git
// remotes through it (clone, fetch, pull, push), as git-lfs does: git
// updates the refs, the index and the work tree under its own locks, with
// reflogs, and knows every transport and credential helper the user set up.
var ErrNoGit = errors.New("the git command is not installed (chunkvc needs it to talk to Git remotes)")

// ErrGitLocked means git found one of its lock files (index.lock, a
// ref's .lock, config.lock…) held: another git is working here, or one
// was killed and left it.
var ErrGitLocked = errors.New("another git process seems to be running in this repository")

// heldLock finds the lock file git names when it cannot take one.
var heldLock = regexp.MustCompile(`Unable to create '([^']+\.lock)': File exists`)

// CLI runs git in one directory.
type CLI struct {
	Dir string
	// Env is added to the process environment (KEY=VALUE).
	Env []string
}

// Run runs git with args and returns its standard output. A failure is an
// error that quotes the end of git's standard error.
func (c CLI) Run(ctx context.Context, args ...string) (string, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return "", ErrNoGit
	}
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = c.Dir
	cmd.Env = append(os.Environ(), c.Env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A chunkvc killed meanwhile leaves git to finish on its own: git
	// makes each of its steps atomic, and a step it completes is better
	// than one cut short (a merge killed halfway leaves half the work tree).
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 2000 {
			msg = "…" + msg[len(msg)-2000:]
		}
		if msg == "" {
			msg = strings.TrimSpace(stdout.String())
		}
		cerr := &CLIError{Args: args, Stderr: msg, Err: err}
		if m := heldLock.FindStringSubmatch(msg); m != nil {
			return stdout.String(), fmt.Errorf("git %s: %w: %s exists; if no git or chunkvc process is running, remove it", args[0], ErrGitLocked, m[1])
		}
		return stdout.String(), cerr
	}
	return stdout.String(), nil
}

// CLIError is a git command that failed.
type CLIError struct {
	Args   []string
	Stderr string // what git said, trimmed
	Err    error
}

func (e *CLIError) Error() string {
	if e.Stderr == "" {
		return fmt.Sprintf("git %s: %v", strings.Join(e.Args, " "), e.Err)
	}
	return fmt.Sprintf("git %s: %v: %s", strings.Join(e.Args, " "), e.Err, e.Stderr)
}

func (e *CLIError) Unwrap() error { return e.Err }
