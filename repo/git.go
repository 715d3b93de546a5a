package repo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	git "github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
)

// ManifestDir is where manifests live, relative to the work tree root.
const ManifestDir = ".chunkvc/manifests"

// ConfigPath is the committed configuration file.
const ConfigPath = ".chunkvc/config"

// ErrNoCommits means the branch has no commit yet.
var ErrNoCommits = errors.New("no commits yet")

// Git reference errors (see repo/internal/gitdb): a ref that exists but
// holds no valid value, a ref another process is updating, and a ref that
// moved between its read and its update. Each refuses the command.
var (
	ErrBrokenRef = gitdb.ErrBrokenRef
	ErrRefLocked = gitdb.ErrRefLocked
	ErrRefMoved  = gitdb.ErrRefMoved
)

// gitRepo wraps the go-git repository; every go-git call goes through it.
type gitRepo struct {
	r    *git.Repository
	root string
	refs *gitdb.Refs
	// mu serializes the object reads that commit's file workers make at
	// once: go-git's object storage is not documented as safe for that.
	mu sync.Mutex
	// work reads the work tree's manifest copies, never through a link.
	// Its directories stay open between reads: one that has moved since
	// only makes a copy miss, as every copy is checked against its blob.
	work *tree
}

func openGit(dir string) (*gitRepo, error) {
	r, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		if errors.Is(err, git.ErrRepositoryNotExists) {
			return nil, fmt.Errorf("%s is not inside a Git repository (run chunkvc init)", dir)
		}
		return nil, fmt.Errorf("open git repository at %s: %w", dir, err)
	}
	wt, err := r.Worktree()
	if err != nil {
		return nil, fmt.Errorf("git repository at %s: %w", dir, err)
	}
	root := wt.Filesystem.Root()
	return &gitRepo{r: r, root: root, refs: gitdb.NewRefs(filepath.Join(root, ".git")), work: newTree(root, "")}, nil
}

func initGit(dir string) (*gitRepo, error) {
	if _, err := (gitdb.CLI{Dir: dir}).Run(context.Background(), "init", "--quiet", "--initial-branch=main"); err != nil {
		return nil, fmt.Errorf("git init %s: %w", dir, err)
	}
	return openGit(dir)
}

// resolve returns the commit named by rev ("" means HEAD). HEAD is read
// the way a commit reads it, so a broken ref is an error here too, never
// an unborn branch.
func (g *gitRepo) resolve(rev string) (*object.Commit, error) {
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
			return nil, fmt.Errorf("%s names commit %s, which cannot be read (%w): %w", name, cur, err, gitdb.ErrBrokenRef)
		}
		return c, nil
	}
	h, err := g.r.ResolveRevision(plumbing.Revision(rev))
	if err != nil {
		return nil, fmt.Errorf("unknown revision %q: %w", rev, err)
	}
	c, err := g.r.CommitObject(*h)
	if err != nil {
		return nil, fmt.Errorf("revision %q: %w", rev, err)
	}
	return c, nil
}

// head returns the HEAD commit, or nil on an unborn branch.
func (g *gitRepo) head() (*object.Commit, error) {
	c, err := g.resolve("")
	if errors.Is(err, ErrNoCommits) {
		return nil, nil
	}
	return c, err
}

// manifestBlobs maps each manifest's data path to its blob hash in commit c
// (nil c: no manifests).
func (g *gitRepo) manifestBlobs(c *object.Commit) (map[string]plumbing.Hash, error) {
	out := map[string]plumbing.Hash{}
	if c == nil {
		return out, nil
	}
	tree, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", c.Hash, err)
	}
	sub, err := tree.Tree(ManifestDir)
	if errors.Is(err, object.ErrDirectoryNotFound) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("commit %s: %s: %w", c.Hash, ManifestDir, err)
	}
	walker := object.NewTreeWalker(sub, true, nil)
	defer walker.Close()
	for {
		name, entry, err := walker.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("commit %s: walk manifests: %w", c.Hash, err)
		}
		if entry.Mode.IsFile() {
			out[name] = entry.Hash
		}
	}
}

// readManifestBlob reads and decodes a manifest blob, checking that it
// describes the path it is stored under.
func (g *gitRepo) readManifestBlob(h plumbing.Hash, p string) (*manifest.Manifest, []byte, error) {
	b, ok := g.readWorkCopy(h, p)
	if !ok {
		var err error
		if b, err = g.readBlob(h, manifest.MaxManifest); err != nil {
			return nil, nil, fmt.Errorf("manifest of %s: %w", p, err)
		}
	}
	m, err := manifest.Decode(b)
	if err != nil {
		return nil, nil, fmt.Errorf("manifest of %s: %w", p, err)
	}
	if m.Path != p {
		return nil, nil, fmt.Errorf("manifest of %s: %w: it describes %q", p, manifest.ErrInvalid, m.Path)
	}
	return m, b, nil
}

// readWorkCopy returns the work tree's copy of p's manifest if it is blob
// h: a file read and a SHA-1 instead of an object lookup and an inflate.
func (g *gitRepo) readWorkCopy(h plumbing.Hash, p string) ([]byte, bool) {
	f, err := g.work.openFile(manifestPath(p), os.O_RDONLY) // no FIFO, nothing outside
	if err != nil {
		return nil, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > manifest.MaxManifest {
		return nil, false
	}
	b := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, b); err != nil || blobHash(b) != h {
		return nil, false
	}
	return b, true
}

func (g *gitRepo) readBlob(h plumbing.Hash, limit int64) ([]byte, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	blob, err := g.r.BlobObject(h)
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", h, err)
	}
	if blob.Size > limit {
		return nil, fmt.Errorf("blob %s: %d bytes, over the %d-byte limit", h, blob.Size, limit)
	}
	rc, err := blob.Reader()
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", h, err)
	}
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, limit))
}

// stage writes blobs for files (work-tree-relative slash path → content)
// and records them in the index, removing the paths in remove. It is
// `git add` for files whose content chunkvc already holds in memory.
func (g *gitRepo) stage(files map[string][]byte, remove []string) error {
	blobs, err := g.writeBlobs(files)
	if err != nil {
		return err
	}
	idx, err := g.index()
	if err != nil {
		return fmt.Errorf("read git index: %w", err)
	}
	if err := g.stageInto(idx, blobs, remove); err != nil {
		return err
	}
	if err := g.setIndex(idx); err != nil {
		return fmt.Errorf("write git index: %w", err)
	}
	return nil
}

// writeBlobs writes each file's blob.
func (g *gitRepo) writeBlobs(files map[string][]byte) (map[string]blob, error) {
	blobs := make(map[string]blob, len(files))
	for p, data := range files {
		b, err := g.writeBlob(data)
		if err != nil {
			return nil, fmt.Errorf("write git object for %s: %w", p, err)
		}
		blobs[p] = b
	}
	return blobs, nil
}

// stageInto records blobs (already written) in idx and removes the paths
// in remove. It looks entries up in a map: go-git's Index.Entry and Remove
// scan every entry, which made a commit of 20,000 files quadratic.
func (g *gitRepo) stageInto(idx *index.Index, files map[string]blob, remove []string) error {
	byName := make(map[string]*index.Entry, len(idx.Entries))
	for _, e := range idx.Entries {
		if _, ok := byName[e.Name]; !ok {
			byName[e.Name] = e
		}
	}
	for p, b := range files {
		e := byName[p]
		if e == nil {
			e = idx.Add(p)
			byName[p] = e
		}
		*e = index.Entry{Name: p, Hash: b.hash, Mode: filemode.Regular, Size: uint32(b.size)}
	}
	if len(remove) > 0 {
		drop := make(map[string]bool, len(remove))
		for _, p := range remove {
			drop[p] = true
		}
		idx.Entries = slices.DeleteFunc(idx.Entries, func(e *index.Entry) bool { return drop[e.Name] })
	}
	return nil
}

// manifestIndex says which manifests a commit speaks for: their index
// entries become what HEAD holds unless the commit writes or removes them.
type manifestIndex struct {
	head map[string]plumbing.Hash // manifest path → HEAD's blob
	// scope says whether the commit considered the manifest at this path
	// (every one, for a commit of the whole work tree).
	scope func(manifestPath string) bool
}

// commit stages files and removals and makes a commit of the whole index,
// the way `git commit` does: index.lock is held throughout, the branch
// moves first, and only then is the new index renamed into place, so a
// commit killed before the branch moved leaves the index as it was. The
// index entries of the manifests in mi's scope are set to what this commit
// records (written, or HEAD's): a commit killed between the branch and the
// index, or by an older chunkvc, left entries staged that no commit made,
// and these must not ride along. It returns ErrNothingToCommit when the
// tree would not change.
func (g *gitRepo) commit(msg string, files map[string]blob, remove []string, mi manifestIndex) (plumbing.Hash, error) {
	sig, err := g.signature()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	lk, err := g.lockIndex()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	defer lk.abort()
	idx, err := g.index()
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read git index: %w", err)
	}
	if err := g.settleManifests(idx, files, remove, mi); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := g.stageInto(idx, files, remove); err != nil {
		return plumbing.ZeroHash, err
	}
	h, err := g.commitIndex(idx, msg, sig)
	if errors.Is(err, ErrNothingToCommit) {
		return plumbing.ZeroHash, err
	}
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("git commit: %w", err)
	}
	if err := lk.commit(idx); err != nil {
		return h, fmt.Errorf("commit %s made, but writing the git index failed (git reset rebuilds it): %w", h, err)
	}
	return h, nil
}

// settleManifests sets the index entries of the manifests in mi's scope
// that files and remove do not change to HEAD's blobs, adds those of
// HEAD's the index lacks, and drops those HEAD does not have.
func (g *gitRepo) settleManifests(idx *index.Index, files map[string]blob, remove []string, mi manifestIndex) error {
	if mi.scope == nil {
		return nil
	}
	gone := make(map[string]bool, len(remove))
	for _, p := range remove {
		gone[p] = true
	}
	var errs []error
	idx.Entries = slices.DeleteFunc(idx.Entries, func(e *index.Entry) bool {
		p := e.Name
		if !strings.HasPrefix(p, ManifestDir+"/") || !mi.scope(p) || gone[p] || e.Stage != 0 {
			return false
		}
		if _, ok := files[p]; ok {
			return false
		}
		h, ok := mi.head[p]
		if !ok {
			return true // staged by a commit that was never made
		}
		if e.Hash != h {
			size, err := g.blobSize(h)
			if err != nil {
				errs = append(errs, fmt.Errorf("manifest %s: %w", p, err))
				return false
			}
			*e = index.Entry{Name: p, Hash: h, Mode: filemode.Regular, Size: uint32(size)}
		}
		return false
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// And HEAD's manifests the index lacks: a commit killed after it moved
	// the branch and before it wrote the index left the one before.
	in := make(map[string]bool, len(idx.Entries))
	for _, e := range idx.Entries {
		in[e.Name] = true
	}
	for p, h := range mi.head {
		if in[p] || gone[p] || !mi.scope(p) {
			continue
		}
		if _, ok := files[p]; ok {
			continue
		}
		size, err := g.blobSize(h)
		if err != nil {
			return fmt.Errorf("manifest %s: %w", p, err)
		}
		e := idx.Add(p)
		*e = index.Entry{Name: p, Hash: h, Mode: filemode.Regular, Size: uint32(size)}
	}
	return nil
}

// blobSize is the size of blob h.
func (g *gitRepo) blobSize(h plumbing.Hash) (int64, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	o, err := g.r.Storer.EncodedObject(plumbing.BlobObject, h)
	if err != nil {
		return 0, fmt.Errorf("blob %s: %w", h, err)
	}
	return o.Size(), nil
}

// signature finds the author the way git does: environment, then config.
func (g *gitRepo) signature() (*object.Signature, error) {
	name, email := os.Getenv("GIT_AUTHOR_NAME"), os.Getenv("GIT_AUTHOR_EMAIL")
	if name == "" || email == "" {
		cfg, err := g.r.ConfigScoped(gitconfig.SystemScope)
		if err != nil {
			return nil, fmt.Errorf("read git config: %w", err)
		}
		if name == "" {
			name = cfg.User.Name
		}
		if email == "" {
			email = cfg.User.Email
		}
	}
	if name == "" || email == "" {
		return nil, errors.New("git does not know who you are: set user.name and user.email with git config")
	}
	return &object.Signature{Name: name, Email: email, When: time.Now()}, nil
}

// branch returns the short name of the checked-out branch, or "HEAD"
// when detached.
func (g *gitRepo) branch() string {
	ref, err := g.r.Storer.Reference(plumbing.HEAD)
	if err != nil || ref.Type() != plumbing.SymbolicReference {
		return "HEAD"
	}
	return ref.Target().Short()
}

// manifestPath maps a data path to its manifest's path in the tree.
func manifestPath(p string) string { return path.Join(ManifestDir, p) }

// isInternal reports whether a work-tree path belongs to chunkvc or git.
func isInternal(p string) bool {
	return p == ".git" || strings.HasPrefix(p, ".git/") || p == ".chunkvc" || strings.HasPrefix(p, ".chunkvc/")
}
