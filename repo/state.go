package repo

import (
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/repo/internal/blockcache"
	"github.com/chunkvc/chunkvc/repo/internal/confine"
	"github.com/chunkvc/chunkvc/repo/internal/statcache"
)

// ErrUnsafePath means chunkvc refused to read or write a path because a
// directory on the way to it is a symbolic link or not a directory, or
// the file itself is not what it must be: nothing is ever written (or
// read) through a link that could lead out of the work tree. It is
// confine.ErrUnsafePath, the error of every refusal of the trees below.
var ErrUnsafePath = confine.ErrUnsafePath

// workTree is the work tree, for data files, manifest copies, the config,
// .gitignore and .gitattributes.
func (r *Repo) workTree() *confine.Tree { return confine.New(r.Root, "") }

// gitTree is .git, for chunkvc's state under .git/chunkvc.
func (r *Repo) gitTree() *confine.Tree { return confine.New(r.gitDir(), ".git") }

// loadStatCache reads the stat cache of the work tree.
func (r *Repo) loadStatCache() *statcache.Cache { return statcache.Load(r.gitTree(), r.Root) }

// loadBlocks returns the cached blocks of the version of a size-byte file
// whose digest is digest, or nil when there is no usable entry.
func (r *Repo) loadBlocks(digest hashing.ID, size int64) *blockcache.Set {
	return blockcache.Load(r.gitTree(), digest, size)
}

// saveBlocks caches the blocks of a file version and drops the entries of
// the versions it replaces; failures only cost time.
func (r *Repo) saveBlocks(digest hashing.ID, size int64, s *blockcache.Set, replaced ...hashing.ID) {
	blockcache.Save(r.gitTree(), digest, size, s, replaced...)
}

// pruneBlocks removes the block cache entries of versions not in current.
func (r *Repo) pruneBlocks(current map[hashing.ID]bool) { blockcache.Prune(r.gitTree(), current) }

// version names one version of a file: its digest and size.
type version struct {
	digest hashing.ID
	size   int64
}

// testHookBlocksReused, when set, learns how many blocks of file p a
// commit took from the block cache; testHookPiecesKnown, how many pieces
// it took from the quick table instead of hashing them.
var (
	testHookBlocksReused func(p string, reused int)
	testHookPiecesKnown  func(p string, known int)
)
