package repo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/confine"
	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
	"github.com/chunkvc/chunkvc/repo/internal/mcache"
)

// ManifestDir is where manifests live, relative to the work tree root.
const ManifestDir = ".chunkvc/manifests"

// ConfigPath is the committed configuration file.
const ConfigPath = ".chunkvc/config"

// ErrNoCommits means the branch has no commit yet.
var ErrNoCommits = gitdb.ErrNoCommits

// Git reference errors (see repo/internal/gitdb): a ref that exists but
// holds no valid value, a ref another process is updating, and a ref that
// moved between its read and its update. Each refuses the command.
var (
	ErrBrokenRef = gitdb.ErrBrokenRef
	ErrRefLocked = gitdb.ErrRefLocked
	ErrRefMoved  = gitdb.ErrRefMoved
)

// ErrUnmerged means the Git index holds a conflict that git has not
// resolved: it has more than one entry for a path.
var ErrUnmerged = gitdb.ErrUnmerged

// ErrGitLocked means a git command holds the Git index's lock file, or
// git found one of its own lock files held.
var ErrGitLocked = gitdb.ErrGitLocked

// packBlobsFrom: a commit that writes at least this many manifests puts
// them in one Git pack rather than a loose object each. Git keeps a loose
// object per file it adds; a commit of 20,000 new files spent a third of
// its CPU creating, writing and renaming 20,000 of them.
const packBlobsFrom = 64

// gitRepo is the repository's Git (see repo/internal/gitdb, through which
// every Git object is read and written) and its work tree.
type gitRepo struct {
	*gitdb.Repo
	// work reads the work tree's manifest copies, never through a link.
	// Its directories stay open between reads: one that has moved since
	// only makes a copy miss, as every copy is checked against its blob.
	work *confine.Tree

	// shards holds, by the blob of a split manifest's root, its shards'
	// blobs by shard name, as manifestBlobs found them beside the root.
	// The root's digest binds its shards' bytes, so a root blob has one
	// set of shards in any commit that holds it whole.
	mu     sync.Mutex
	shards map[gitdb.Hash]map[string]gitdb.Hash
	// read holds, by data path, the shards of the split manifest last read
	// for it: a commit's new manifest writes again only the shards that
	// differ from those of the version it replaces.
	read map[string]map[string]gitdb.Hash
}

func openGit(dir string) (*gitRepo, error) {
	g, err := gitdb.Open(dir)
	if errors.Is(err, gitdb.ErrNotRepository) {
		return nil, fmt.Errorf("%s is not inside a Git repository (run chunkvc init)", dir)
	}
	if err != nil {
		return nil, err
	}
	return &gitRepo{Repo: g, work: confine.New(g.Root(), ""), shards: map[gitdb.Hash]map[string]gitdb.Hash{}, read: map[string]map[string]gitdb.Hash{}}, nil
}

func initGit(dir string) (*gitRepo, error) {
	if _, err := (gitdb.CLI{Dir: dir}).Run(context.Background(), "init", "--quiet", "--initial-branch=main"); err != nil {
		return nil, fmt.Errorf("git init %s: %w", dir, err)
	}
	return openGit(dir)
}

// manifestBlobs maps each manifest's data path to its blob hash in commit c
// (nil c: no manifests): the manifest, or the root of a split one, whose
// shards it notes for readManifestBlob.
func (g *gitRepo) manifestBlobs(c *gitdb.Commit) (map[string]gitdb.Hash, error) {
	roots, err := g.ManifestBlobs(c, ManifestDir)
	if err != nil {
		return nil, err
	}
	shards, err := g.ManifestBlobs(c, manifest.ShardDir)
	if err != nil || len(shards) == 0 {
		return roots, err
	}
	g.noteShards(func(p string) (gitdb.Hash, bool) { h, ok := roots[p]; return h, ok }, func(yield func(gitdb.TreeEntry) bool) {
		for sp, h := range shards {
			if !yield(gitdb.TreeEntry{Path: sp, Hash: h}) {
				return
			}
		}
	})
	return roots, nil
}

// noteShards notes, for readManifestBlob, the shards of each split
// manifest among a commit's: root finds a manifest's blob by data path,
// shards are the files under manifest.ShardDir.
func (g *gitRepo) noteShards(root func(string) (gitdb.Hash, bool), shards iter.Seq[gitdb.TreeEntry]) {
	found := map[gitdb.Hash]map[string]gitdb.Hash{}
	isRoot := func(p string) bool { _, ok := root(p); return ok }
	for s := range shards {
		p, ok := shardOwner(s.Path, isRoot)
		if !ok {
			continue // a stray shard; fsck reports what it is missing from
		}
		h, _ := root(p)
		if found[h] == nil {
			found[h] = map[string]gitdb.Hash{}
		}
		found[h][s.Path[len(p)+1:]] = s.Hash
	}
	if len(found) == 0 {
		return
	}
	g.mu.Lock()
	for h, s := range found {
		g.shards[h] = s
	}
	g.mu.Unlock()
}

// shardsOf returns the shards noted for the root blob h, nil if none.
func (g *gitRepo) shardsOf(h gitdb.Hash) map[string]gitdb.Hash {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.shards[h]
}

// readManifestBlob reads and decodes a manifest blob, checking that it
// describes the path it is stored under; a split manifest's root is read
// with its shards. The bytes returned are the blob's (a split manifest's
// root).
func (g *gitRepo) readManifestBlob(h gitdb.Hash, p string) (*manifest.Manifest, []byte, error) {
	return g.decodeManifestBlob(h, p, true)
}

// decodeManifestBlob is readManifestBlob; with cached false, a split
// manifest's shards are read and checked even when the manifest cache
// holds its chunks (fsck checks what Git holds, not the cache).
func (g *gitRepo) decodeManifestBlob(h gitdb.Hash, p string, cached bool) (*manifest.Manifest, []byte, error) {
	// A root that is the work tree's copy is the checked-out version, the
	// one the next command reads again: only its chunks are worth caching
	// (gc and log read every version of history).
	b, checkedOut := g.readWorkCopy(h, manifestPath(p))
	var err error
	if !checkedOut {
		if b, err = g.ReadBlob(h, manifest.MaxManifest); err != nil {
			return nil, nil, fmt.Errorf("manifest of %s: %w", p, err)
		}
	}
	var m *manifest.Manifest
	if manifest.IsSplit(b) {
		m, err = g.readSplit(h, p, b, cached, checkedOut)
	} else {
		m, err = manifest.Decode(b)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("manifest of %s: %w", p, err)
	}
	if m.Path != p {
		return nil, nil, fmt.Errorf("manifest of %s: %w: it describes %q", p, manifest.ErrInvalid, m.Path)
	}
	return m, b, nil
}

// readSplit reads the shards of the split manifest whose root (blob h) is
// root, and decodes it; with cached, from the manifest cache when it has
// them, and with keep, leaving its chunks there for the next command.
func (g *gitRepo) readSplit(h gitdb.Hash, p string, root []byte, cached, keep bool) (*manifest.Manifest, error) {
	shards := g.shardsOf(h)
	noteRead := func() {
		g.mu.Lock()
		g.read[p] = shards
		g.mu.Unlock()
	}
	if cached {
		if m, ok := g.cachedSplit(h, p, root); ok {
			noteRead()
			return m, nil
		}
	}
	parts := make([]manifest.Part, 0, len(shards))
	for name, sh := range shards {
		b, err := g.readText(sh, manifest.ShardPath(p, name))
		if err != nil {
			return nil, fmt.Errorf("shard %s: %w", name, err)
		}
		parts = append(parts, manifest.Part{Name: name, Data: b})
	}
	m, err := manifest.DecodeSplit(root, parts)
	if err == nil {
		noteRead()
		if keep {
			g.cacheSplit(h, m)
		}
	}
	return m, err
}

// cachedSplit is the split manifest whose root (blob h) is root from the
// manifest cache (mcache), if it holds that root's chunks: the root's
// own lines are parsed, the chunk lines read from the cache.
func (g *gitRepo) cachedSplit(h gitdb.Hash, p string, root []byte) (*manifest.Manifest, bool) {
	m, count, _, err := manifest.DecodeRoot(root)
	if err != nil {
		return nil, false
	}
	cs, ok := mcache.Load(mcache.Slot(g.mcacheDir(), p), h, count)
	if !ok {
		return nil, false
	}
	m.Chunks = cs
	return m, true
}

// cacheSplit keeps the chunks of m, the split manifest whose root is blob
// h, in the manifest cache for the next command; a cache that cannot be
// written (a read-only .git) only costs that command the decoding.
func (g *gitRepo) cacheSplit(h gitdb.Hash, m *manifest.Manifest) {
	_ = mcache.Save(mcache.Slot(g.mcacheDir(), m.Path), h, m.Chunks)
}

// mcacheDir is the manifest cache's folder, .git/chunkvc/mcache.
func (g *gitRepo) mcacheDir() string { return filepath.Join(g.Root(), ".git", "chunkvc", "mcache") }

// readShards returns the shards of the split manifest last read for p
// (nil if none), whose blobs are in Git already.
func (g *gitRepo) readShards(p string) map[string]gitdb.Hash {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.read[p]
}

// readText returns blob h, the text of the tree's file rel: the work
// tree's copy when it is that blob, else the object.
func (g *gitRepo) readText(h gitdb.Hash, rel string) ([]byte, error) {
	if b, ok := g.readWorkCopy(h, rel); ok {
		return b, nil
	}
	return g.ReadBlob(h, manifest.MaxManifest)
}

// readWorkCopy returns the work tree's copy of file rel if it is blob h:
// a file read and a SHA-1 instead of an object lookup and an inflate.
func (g *gitRepo) readWorkCopy(h gitdb.Hash, rel string) ([]byte, bool) {
	f, err := g.work.OpenFile(rel, os.O_RDONLY) // no FIFO, nothing outside
	if err != nil {
		return nil, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > manifest.MaxManifest {
		return nil, false
	}
	b := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, b); err != nil || gitdb.BlobHash(b) != h {
		return nil, false
	}
	return b, true
}

// commit makes the Git commit of files and remove (gitdb's Commit), with
// repo's ErrNothingToCommit.
func (g *gitRepo) commit(msg string, files map[string]gitdb.Blob, remove []string, s gitdb.Settle) (gitdb.Made, error) {
	m, err := g.CommitListing(msg, files, remove, s, listedDirs()...)
	if errors.Is(err, gitdb.ErrNothingToCommit) {
		return m, ErrNothingToCommit
	}
	return m, err
}

// manifestPath maps a data path to its manifest's path in the tree.
func manifestPath(p string) string { return path.Join(ManifestDir, p) }

// isManifestRoot reports whether d is a folder under which manifest
// files (or shard files) are kept by path: the folders commit stops at
// when it removes emptied ones.
func isManifestRoot(d string) bool {
	return d == ManifestDir || d == manifest.ShardDir || d == "." || d == "/"
}

// isInternal reports whether a work-tree path belongs to chunkvc or git.
func isInternal(p string) bool {
	return p == ".git" || strings.HasPrefix(p, ".git/") || p == ".chunkvc" || strings.HasPrefix(p, ".chunkvc/")
}
