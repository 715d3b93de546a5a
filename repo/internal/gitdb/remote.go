package gitdb

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The transfer side of Git, run with the git command: clone, push, fetch
// and a fast-forward pull. Each reloads what it may have changed.

// ErrPushRejected means the Git remote refused the branch (it has commits
// this clone lacks): pull, then push again.
var ErrPushRejected = errors.New("the remote rejected the push (pull first)")

// ErrNoBranch means a clone could not tell which branch to check out.
var ErrNoBranch = errors.New("cannot tell which branch to check out")

// pushVerifiedEnv tells the pre-push hook that chunkvc push has just
// uploaded and verified the chunks of the commit it names, so the hook
// need not check them again.
const pushVerifiedEnv = "CHUNKVC_PUSH_VERIFIED"

// Push pushes branch to the same name on remote with git, which updates
// the remote-tracking ref (with its reflog) when the remote accepts. It
// reports whether the remote moved. The pre-push hook that git runs sees
// tip as verified (PushVerified).
func (g *Repo) Push(ctx context.Context, remote, branch, tip string) (bool, error) {
	ref := "refs/heads/" + branch
	c := g.CLI()
	c.Env = []string{pushVerifiedEnv + "=" + tip}
	out, err := c.Run(ctx, "push", "--porcelain", "--", remote, ref+":"+ref)
	defer g.Reload()
	for _, line := range strings.Split(out, "\n") {
		flag, rest, ok := strings.Cut(line, "\t")
		if !ok || !strings.HasPrefix(rest, ref+":") {
			continue
		}
		switch flag {
		case "=":
			return false, nil
		case "!":
			return false, fmt.Errorf("git push %s %s: %w: %w", remote, branch, ErrPushRejected, err)
		}
	}
	if err != nil {
		return false, fmt.Errorf("git push %s %s: %w", remote, branch, err)
	}
	return true, nil
}

// PushVerified reports whether chunkvc push, which runs the pre-push hook
// through git push, has already verified the chunks of every tip.
func PushVerified(tips []string) bool {
	v := os.Getenv(pushVerifiedEnv)
	if v == "" || len(tips) == 0 {
		return false
	}
	for _, t := range tips {
		if t != v && t != strings.Repeat("0", 40) {
			return false
		}
	}
	return true
}

// Fetch runs git fetch and reports whether any of remote's refs moved.
func (g *Repo) Fetch(ctx context.Context, remote string) (bool, error) {
	before, err := g.remoteRefs(ctx, remote)
	if err != nil {
		return false, err
	}
	_, err = g.CLI().Run(ctx, "fetch", "--quiet", "--", remote)
	g.Reload()
	if err != nil {
		return false, fmt.Errorf("git fetch %s: %w", remote, err)
	}
	after, err := g.remoteRefs(ctx, remote)
	return before != after, err
}

func (g *Repo) remoteRefs(ctx context.Context, remote string) (string, error) {
	return g.CLI().Run(ctx, "for-each-ref", "--format=%(objectname) %(refname)", "refs/remotes/"+remote+"/")
}

// Pull fetches remote and fast-forwards the checked-out branch to its
// upstream (or remote's branch of the same name), with git.
func (g *Repo) Pull(ctx context.Context, remote string) error {
	branch, _, err := g.Refs().Head()
	if err != nil {
		return err
	}
	if branch == "" {
		return errors.New("HEAD is detached: check out a branch to pull")
	}
	if _, err := g.Fetch(ctx, remote); err != nil {
		return err
	}
	short := strings.TrimPrefix(branch, "refs/heads/")
	up := "refs/remotes/" + remote + "/" + short
	if out, err := g.CLI().Run(ctx, "rev-parse", "--symbolic-full-name", short+"@{upstream}"); err == nil {
		if u := strings.TrimSpace(out); strings.HasPrefix(u, "refs/remotes/"+remote+"/") {
			up = u
		}
	}
	if _, ok, err := g.Refs().Read(up); err != nil || !ok {
		if err == nil {
			err = fmt.Errorf("%s has no branch %s", remote, short)
		}
		return fmt.Errorf("git pull %s: %w", remote, err)
	}
	head, born, err := g.Refs().Read(branch)
	if err != nil {
		return err
	}
	if _, err := g.CLI().Run(ctx, "merge-base", "--is-ancestor", head.String(), up); born && err != nil {
		if _, err := g.CLI().Run(ctx, "merge-base", "--is-ancestor", up, head.String()); err == nil {
			return nil // nothing new: the upstream is in our history
		}
		return &DivergedError{Upstream: up}
	}
	_, err = g.CLI().Run(ctx, "merge", "--ff-only", "--quiet", up)
	g.Reload()
	if err != nil {
		return fmt.Errorf("git pull %s (fast-forward only): %w", remote, err)
	}
	return nil
}

// DivergedError is a pull whose branch and upstream both have commits
// the other lacks: they need a merge.
type DivergedError struct{ Upstream string }

func (e *DivergedError) Error() string {
	return "the branch and " + e.Upstream + " have diverged"
}

// Clone runs git clone of url into dir (branch "" = the remote's HEAD)
// and makes sure a branch is checked out. It returns that branch's short
// name, and chosen when the remote's HEAD named a branch it lacks (a bare
// repository whose HEAD names master when only main was pushed) and
// Clone chose one: the only one, or main, or master.
func Clone(ctx context.Context, url, dir, branch string) (name string, chosen bool, err error) {
	args := []string{"clone", "--quiet"}
	if branch != "" {
		args = append(args, "--branch", branch)
	}
	args = append(args, "--", url, dir)
	if _, err := (CLI{}).Run(ctx, args...); err != nil {
		return "", false, fmt.Errorf("git clone %s: %w", url, err)
	}
	g := CLI{Dir: dir}
	refs := NewRefs(filepath.Join(dir, ".git"))
	head, _, err := refs.Head()
	if err != nil {
		return "", false, err
	}
	name = strings.TrimPrefix(head, "refs/heads/")
	if _, ok, err := refs.Read("HEAD"); err != nil || ok {
		return name, false, err
	}
	// HEAD names a branch the remote does not have.
	out, err := g.Run(ctx, "for-each-ref", "--format=%(refname:strip=3)", "refs/remotes/origin/")
	if err != nil {
		return "", false, err
	}
	var names []string
	for _, n := range strings.Fields(out) {
		if n != "HEAD" {
			names = append(names, n)
		}
	}
	pick := ""
	switch {
	case len(names) == 1:
		pick = names[0]
	case slices.Contains(names, "main"):
		pick = "main"
	case slices.Contains(names, "master"):
		pick = "master"
	case len(names) == 0:
		return "", false, fmt.Errorf("git clone %s: %w: the remote has no branches", url, ErrNoBranch)
	default:
		return "", false, fmt.Errorf("git clone %s: %w: the remote's HEAD names %s, which it lacks, and it has %s (choose one with --branch)",
			url, ErrNoBranch, name, strings.Join(names, ", "))
	}
	if _, err := g.Run(ctx, "checkout", "--quiet", "-B", pick, "--track", "origin/"+pick); err != nil {
		return "", false, err
	}
	return pick, true, nil
}

// HashOf parses a commit name given as hex (a registry entry's tip, the
// pre-push hook's input), as Git's library reads one: what decodes.
func HashOf(h string) Hash {
	var out Hash
	b, _ := hex.DecodeString(h)
	copy(out[:], b)
	return out
}
