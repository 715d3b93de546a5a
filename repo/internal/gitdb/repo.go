package gitdb

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	gogit "github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// ErrNotRepository means Open found no Git repository at or above the
// folder it was given.
var ErrNotRepository = errors.New("not inside a Git repository")

// Repo is one Git repository with a work tree, opened from disk.
// ReadBlob and the blob writers (PutBlob, PutBlobFrom, PutBlobsPacked)
// are safe for concurrent use, with each other too. The other methods are
// not: the caller serializes them.
type Repo struct {
	r      *gogit.Repository
	root   string // the work tree
	gitDir string // root/.git
	refs   *Refs
	// mu serializes the object reads that commit's file workers make at
	// once: the object storage is not documented as safe for that.
	mu sync.Mutex
}

// Open opens the repository whose work tree holds dir (dir itself or a
// folder above it). No repository there is ErrNotRepository.
func Open(dir string) (*Repo, error) {
	r, err := gogit.PlainOpenWithOptions(dir, &gogit.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		if errors.Is(err, gogit.ErrRepositoryNotExists) {
			return nil, fmt.Errorf("%s: %w", dir, ErrNotRepository)
		}
		return nil, fmt.Errorf("open git repository at %s: %w", dir, err)
	}
	wt, err := r.Worktree()
	if err != nil {
		return nil, fmt.Errorf("git repository at %s: %w", dir, err)
	}
	root := wt.Filesystem.Root()
	gitDir := filepath.Join(root, ".git")
	return &Repo{r: r, root: root, gitDir: gitDir, refs: NewRefs(gitDir)}, nil
}

// Root is the work tree's root folder, absolute.
func (g *Repo) Root() string { return g.root }

// Refs reads and updates the repository's refs.
func (g *Repo) Refs() *Refs { return g.refs }

// CLI runs the git command in the work tree's root.
func (g *Repo) CLI() CLI { return CLI{Dir: g.root} }

// Reload makes the repository look for packs again: a git command run
// since Open may have added some, and objects in them are not found
// otherwise.
func (g *Repo) Reload() {
	if fsys, ok := g.r.Storer.(*filesystem.Storage); ok {
		g.mu.Lock()
		fsys.Reindex()
		g.mu.Unlock()
	}
}

// Branch returns the short name of the checked-out branch ("main"), or
// "HEAD" when HEAD is detached or cannot be read.
func (g *Repo) Branch() string {
	ref, err := g.r.Storer.Reference(plumbing.HEAD)
	if err != nil || ref.Type() != plumbing.SymbolicReference {
		return "HEAD"
	}
	return ref.Target().Short()
}

// Remote is a configured Git remote.
type Remote struct {
	Name string
	URLs []string // as configured; the first is fetched from
}

// Remotes lists the remotes .git/config configures, by name.
func (g *Repo) Remotes() ([]Remote, error) {
	rs, err := g.r.Remotes()
	if err != nil {
		return nil, err
	}
	out := make([]Remote, 0, len(rs))
	for _, rm := range rs {
		c := rm.Config()
		out = append(out, Remote{Name: c.Name, URLs: c.URLs})
	}
	slices.SortFunc(out, func(a, b Remote) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// signature finds the author and committer the way git does: name and
// email from GIT_AUTHOR_NAME and GIT_AUTHOR_EMAIL, then config (system,
// global and the repository's), the same for both; the times from
// GIT_AUTHOR_DATE and GIT_COMMITTER_DATE, or now.
func (g *Repo) signature() (author, committer Ident, err error) {
	who, err := g.who()
	if err != nil {
		return Ident{}, Ident{}, err
	}
	now := time.Now()
	author, committer = who, who
	if author.When, err = envDate("GIT_AUTHOR_DATE", now); err != nil {
		return Ident{}, Ident{}, err
	}
	if committer.When, err = envDate("GIT_COMMITTER_DATE", now); err != nil {
		return Ident{}, Ident{}, err
	}
	return author, committer, nil
}

// who finds the author's name and email (see signature).
func (g *Repo) who() (Ident, error) {
	name, email := os.Getenv("GIT_AUTHOR_NAME"), os.Getenv("GIT_AUTHOR_EMAIL")
	if name == "" || email == "" {
		cfg, err := g.r.ConfigScoped(gitconfig.SystemScope)
		if err != nil {
			return Ident{}, fmt.Errorf("read git config: %w", err)
		}
		if name == "" {
			name = cfg.User.Name
		}
		if email == "" {
			email = cfg.User.Email
		}
	}
	if name == "" || email == "" {
		return Ident{}, errors.New("git does not know who you are: set user.name and user.email with git config")
	}
	return Ident{Name: name, Email: email}, nil
}
