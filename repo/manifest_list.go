package repo

import (
	"path"
	"slices"
	"strings"

	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
	"github.com/chunkvc/chunkvc/repo/internal/statcache"
)

// manifestList is a commit's manifests (split ones' roots), by data path
// in byte order: what manifestBlobs maps, for callers that walk it beside
// the sorted list of work-tree files rather than look 20,000 paths up in
// a map.
type manifestList []gitdb.TreeEntry

// listedDirs are the folders of a commit's tree that a listing holds:
// the manifests and the shards of split ones.
func listedDirs() []string { return []string{ManifestDir, manifest.ShardDir} }

// headList returns commit c's manifests (nil c: none), from the listing
// saved for c's tree (statcache.LoadListing) when there is one, else read
// from its tree objects and saved for the next command; and the shard
// files (by path under manifest.ShardDir) of its split manifests, which it
// notes as manifestBlobs notes them.
func (r *Repo) headList(c *gitdb.Commit) (manifestList, []gitdb.TreeEntry, error) {
	if c == nil {
		return nil, nil, nil
	}
	dirs := listedDirs()
	lists, ok := statcache.LoadListing(r.gitTree(), c.TreeHash, dirs)
	if !ok {
		lists = make([][]gitdb.TreeEntry, len(dirs))
		for i, d := range dirs {
			l, err := r.git.ListFiles(c.TreeHash, d)
			if err != nil {
				return nil, nil, err
			}
			lists[i] = l
		}
		_ = statcache.SaveListing(r.gitTree(), c.TreeHash, dirs, lists)
	}
	roots := manifestList(lists[0])
	isRoot := func(p string) bool { _, ok := roots.find(p); return ok }
	shards := slices.DeleteFunc(lists[1], func(s gitdb.TreeEntry) bool {
		_, ok := shardOwner(s.Path, isRoot)
		return !ok // a stray shard; fsck reports what it is missing from
	})
	r.git.noteShards(roots.find, slices.Values(shards))
	return roots, shards, nil
}

// saveListing saves the listing of a commit's tree, made.
func (r *Repo) saveListing(made gitdb.Made) {
	if len(made.Lists) == len(listedDirs()) {
		_ = statcache.SaveListing(r.gitTree(), made.Tree, listedDirs(), made.Lists)
	}
}

// find returns p's manifest blob, by binary search.
func (l manifestList) find(p string) (gitdb.Hash, bool) {
	i, ok := slices.BinarySearchFunc(l, p, func(e gitdb.TreeEntry, p string) int { return strings.Compare(e.Path, p) })
	if !ok {
		return gitdb.Hash{}, false
	}
	return l[i].Hash, true
}

// listCursor looks paths up in a manifestList in increasing order, each
// from where the last one was found: a walk of both lists at once. A path
// out of order is looked up by binary search.
type listCursor struct {
	l    manifestList
	i    int
	last string
}

func (c *listCursor) find(p string) (gitdb.Hash, bool) {
	if p < c.last {
		return c.l.find(p)
	}
	c.last = p
	for c.i < len(c.l) && c.l[c.i].Path < p {
		c.i++
	}
	if c.i < len(c.l) && c.l[c.i].Path == p {
		return c.l[c.i].Hash, true
	}
	return gitdb.Hash{}, false
}

// shardOwner returns the data path whose split manifest a shard file at
// sp (its path under manifest.ShardDir, <path>/<name>) belongs to: the
// nearest folder that a manifest names (a file's path is never a folder
// of another file's); false for a stray shard.
func shardOwner(sp string, isRoot func(string) bool) (string, bool) {
	for p := path.Dir(sp); p != "."; p = path.Dir(p) {
		if isRoot(p) {
			return p, true
		}
	}
	return "", false
}
