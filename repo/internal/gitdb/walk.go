package gitdb

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// The walks list each commit once, in depth-first preorder from each
// start in turn (a commit, then its first parent's line, then the other
// parents'), as go-git's preorder iterator visits them.

// CommitsBetween lists the commits reachable from tips but not from
// except: what a push of tips sends to a remote that has except. A zero
// hash in either is skipped, and so is a commit of except this repository
// lacks (the remote has a commit we do not know); a tip it lacks is an
// error.
func (g *Repo) CommitsBetween(tips, except []Hash) ([]*Commit, error) {
	stop := map[plumbing.Hash]bool{}
	for _, e := range except {
		if e.IsZero() {
			continue
		}
		c, err := g.r.CommitObject(plumbing.Hash(e))
		if err != nil {
			continue
		}
		iter := object.NewCommitPreorderIter(c, stop, nil)
		_ = iter.ForEach(func(c *object.Commit) error { stop[c.Hash] = true; return nil })
	}
	var out []*Commit
	seen := map[plumbing.Hash]bool{}
	for _, t := range tips {
		if t.IsZero() {
			continue
		}
		c, err := g.r.CommitObject(plumbing.Hash(t))
		if err != nil {
			return nil, fmt.Errorf("commit %s: %w", t, err)
		}
		iter := object.NewCommitPreorderIter(c, stop, nil)
		err = iter.ForEach(func(c *object.Commit) error {
			if !seen[c.Hash] && !stop[c.Hash] {
				seen[c.Hash] = true
				out = append(out, newCommit(c))
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Reachable lists every commit reachable from any ref under refs/ or
// HEAD. A ref to a tag or a tree starts no walk; a loose ref that cannot
// be read is ErrBrokenRef (see Refs.List).
func (g *Repo) Reachable() ([]*Commit, error) {
	var starts []plumbing.Hash
	err := g.refs.List(func(_ string, h Hash) error {
		starts = append(starts, plumbing.Hash(h))
		return nil
	})
	if err != nil {
		return nil, err
	}
	if h, err := g.Head(); err == nil && h != nil {
		starts = append(starts, plumbing.Hash(h.Hash))
	}
	seen := map[plumbing.Hash]bool{}
	var out []*Commit
	for _, s := range starts {
		c, err := g.r.CommitObject(s)
		if err != nil {
			continue // a ref to a tag or tree: not a commit
		}
		iter := object.NewCommitPreorderIter(c, seen, nil)
		err = iter.ForEach(func(c *object.Commit) error {
			if seen[c.Hash] {
				return nil
			}
			seen[c.Hash] = true
			out = append(out, newCommit(c))
			return nil
		})
		if err != nil && !errors.Is(err, storer.ErrStop) && !errors.Is(err, io.EOF) {
			return nil, err
		}
	}
	return out, nil
}

// History lists every commit reachable from tips, which must all be
// commits this repository has.
func (g *Repo) History(tips []Hash) ([]*Commit, error) {
	seen := map[plumbing.Hash]bool{}
	var out []*Commit
	for _, h := range tips {
		c, err := g.r.CommitObject(plumbing.Hash(h))
		if err != nil {
			return nil, fmt.Errorf("commit %s: %w", h, err)
		}
		err = object.NewCommitPreorderIter(c, seen, nil).ForEach(func(c *object.Commit) error {
			if !seen[c.Hash] {
				seen[c.Hash] = true
				out = append(out, newCommit(c))
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("history of %s: %w", h, err)
		}
	}
	return out, nil
}

// ReflogCommits returns the commits that reflog entries newer than since
// name, old and new values alike (an amended or reset-away commit stays
// restorable for as long), in no particular order and possibly more than
// once. Unreadable logs and lines, and values that are no commit this
// repository has, are skipped.
func (g *Repo) ReflogCommits(since time.Time) ([]*Commit, error) {
	var out []*Commit
	root := filepath.Join(g.gitDir, "logs")
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return nil
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			from, to, sec, ok := parseReflogLine(sc.Text())
			if !ok || time.Unix(sec, 0).Before(since) {
				continue
			}
			for _, h := range [2]string{from, to} {
				if c, err := g.r.CommitObject(plumbing.NewHash(h)); err == nil {
					out = append(out, newCommit(c))
				}
			}
		}
		return nil
	})
	return out, nil
}

// parseReflogLine reads the values and the time of a reflog line:
// "<old> <new> Name <email> <unix seconds> <+hhmm>\t<message>". ok is false
// for a line too short to hold them, or whose time is not decimal digits
// or past what an int64 holds.
func parseReflogLine(line string) (from, to string, sec int64, ok bool) {
	line, _, _ = strings.Cut(line, "\t")
	f := strings.Fields(line)
	if len(f) < 4 {
		return "", "", 0, false
	}
	ts := f[len(f)-2]
	for _, c := range ts {
		if c < '0' || c > '9' {
			return "", "", 0, false
		}
		d := int64(c - '0')
		if sec > (math.MaxInt64-d)/10 {
			return "", "", 0, false
		}
		sec = sec*10 + d
	}
	return f[0], f[1], sec, true
}
