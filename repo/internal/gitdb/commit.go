package gitdb

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// ErrNoCommits means HEAD's branch has no commit yet (it is unborn).
var ErrNoCommits = errors.New("no commits yet")

// Commit is a commit object as chunkvc reads it. It is a value: it holds
// no reference to the repository it was read from.
type Commit struct {
	Hash         Hash
	TreeHash     Hash
	ParentHashes []Hash // first parent first; none for a root commit
	Author       Ident
	Committer    Ident
	Message      string // as stored, trailing newline included
}

// newCommit copies what chunkvc reads of c.
func newCommit(c *object.Commit) *Commit {
	ps := make([]Hash, len(c.ParentHashes))
	for i, p := range c.ParentHashes {
		ps[i] = Hash(p)
	}
	return &Commit{
		Hash: Hash(c.Hash), TreeHash: Hash(c.TreeHash), ParentHashes: ps,
		Author: Ident(c.Author), Committer: Ident(c.Committer), Message: c.Message,
	}
}

// ReadCommit reads commit h. An object that is missing or not a commit is
// an error.
func (g *Repo) ReadCommit(h Hash) (*Commit, error) {
	c, err := g.r.CommitObject(plumbing.Hash(h))
	if err != nil {
		return nil, err
	}
	return newCommit(c), nil
}

// Resolve returns the commit named by rev: "" or "HEAD" for HEAD, else
// any revision git's rev-parse syntax names that the library resolves (a
// branch, tag, commit id, HEAD~2…). HEAD is read the way a commit reads
// it: an unborn branch is ErrNoCommits, and a ref that exists but cannot
// be read is ErrBrokenRef, never an unborn branch.
func (g *Repo) Resolve(rev string) (*Commit, error) {
	if rev == "" || rev == "HEAD" {
		name, cur, err := g.headTarget()
		if err != nil {
			return nil, err
		}
		if cur.IsZero() {
			return nil, ErrNoCommits
		}
		c, err := g.r.CommitObject(plumbing.Hash(cur))
		if err != nil {
			return nil, fmt.Errorf("%s names commit %s, which cannot be read (%w): %w", name, cur, err, ErrBrokenRef)
		}
		return newCommit(c), nil
	}
	h, err := g.r.ResolveRevision(plumbing.Revision(rev))
	if err != nil {
		return nil, fmt.Errorf("unknown revision %q: %w", rev, err)
	}
	c, err := g.r.CommitObject(*h)
	if err != nil {
		return nil, fmt.Errorf("revision %q: %w", rev, err)
	}
	return newCommit(c), nil
}

// Head returns HEAD's commit, or nil on an unborn branch; errors are
// Resolve's.
func (g *Repo) Head() (*Commit, error) {
	c, err := g.Resolve("")
	if errors.Is(err, ErrNoCommits) {
		return nil, nil
	}
	return c, err
}

// Peel returns the commit h names, through annotated tags.
func (g *Repo) Peel(h Hash) (*Commit, error) {
	ph := plumbing.Hash(h)
	for range 10 {
		if c, err := g.r.CommitObject(ph); err == nil {
			return newCommit(c), nil
		}
		t, err := g.r.TagObject(ph)
		if err != nil {
			return nil, err
		}
		ph = t.Target
	}
	return nil, fmt.Errorf("tag chain at %s too deep", ph)
}

// ManifestBlobs maps each file under the folder dir (a slash path such as
// ".chunkvc/manifests") of commit c's tree, by its path below dir, to its
// blob; a symbolic link counts as a file (its blob holds the target), a
// submodule does not. A nil c, or a tree without dir, gives an empty map.
func (g *Repo) ManifestBlobs(c *Commit, dir string) (map[string]Hash, error) {
	out := map[string]Hash{}
	if c == nil {
		return out, nil
	}
	files, err := g.listFiles(c.TreeHash, dir)
	if errors.Is(err, errNoDir) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("commit %s: %s: %w", c.Hash, dir, err)
	}
	n := 0
	for _, list := range files {
		n += len(list)
	}
	out = make(map[string]Hash, n)
	for _, list := range files {
		for _, f := range list {
			out[f.Path] = f.Hash
		}
	}
	return out, nil
}

// ListFiles returns what ManifestBlobs maps, the files under the folder
// dir of tree, as a list sorted by path in byte order (a tree orders a
// folder as its name and "/"); a tree without dir holds none.
func (g *Repo) ListFiles(tree Hash, dir string) ([]TreeEntry, error) {
	files, err := g.listFiles(tree, dir)
	if errors.Is(err, errNoDir) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("tree %s: %s: %w", tree, dir, err)
	}
	n := 0
	for _, list := range files {
		n += len(list)
	}
	out := make([]TreeEntry, 0, n)
	for _, list := range files {
		out = append(out, list...)
	}
	slices.SortFunc(out, func(a, b TreeEntry) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}
