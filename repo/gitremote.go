package repo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
)

// ErrPushRejected means the Git remote refused the branch (it has commits
// this clone lacks): pull, then push again.
var ErrPushRejected = errors.New("the remote rejected the push (pull first)")

// pushVerifiedEnv tells the pre-push hook that chunkvc push has just
// uploaded and verified the chunks of the commit it names, so the hook
// need not check them again.
const pushVerifiedEnv = "CHUNKVC_PUSH_VERIFIED"

// push pushes branch to the same name on remote with git, which updates
// the remote-tracking ref (with its reflog) when the remote accepts. It
// reports whether the remote moved.
func (g *gitRepo) push(ctx context.Context, remote, branch, tip string) (bool, error) {
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

// fetch runs git fetch and reports whether any of remote's refs moved.
func (g *gitRepo) fetch(ctx context.Context, remote string) (bool, error) {
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

func (g *gitRepo) remoteRefs(ctx context.Context, remote string) (string, error) {
	return g.CLI().Run(ctx, "for-each-ref", "--format=%(objectname) %(refname)", "refs/remotes/"+remote+"/")
}

// pull fetches remote and fast-forwards the checked-out branch to its
// upstream (or remote's branch of the same name), with git.
func (g *gitRepo) pull(ctx context.Context, remote string) error {
	branch, _, err := g.Refs().Head()
	if err != nil {
		return err
	}
	if branch == "" {
		return errors.New("HEAD is detached: check out a branch to pull")
	}
	if _, err := g.fetch(ctx, remote); err != nil {
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
	_, err = g.CLI().Run(ctx, "merge", "--ff-only", "--quiet", up)
	g.Reload()
	if err != nil {
		return fmt.Errorf("git pull %s (fast-forward only): %w", remote, err)
	}
	return nil
}

// pushVerified reports whether chunkvc push, which runs the pre-push hook
// through git push, has already verified the chunks of every tip.
func pushVerified(tips []string) bool {
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
