package repo

import (
	"path"
	"strings"

	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
)

// Split manifests in a commit. A file of more than splitAt chunks has a
// root under ManifestDir and shard files under manifest.ShardDir/<path>/;
// a commit writes the shards that changed and the root, and removes the
// shards a new version no longer has (all of them when the file is
// deleted, or when it shrinks back to one manifest).

// gitFiles maps the tree path of each file of ch's manifest (its root and
// its shards) to its blob; named's Wait must have returned.
func (ch *chunked) gitFiles() map[string]gitdb.Blob {
	out := map[string]gitdb.Blob{manifestPath(ch.m.Path): ch.blob}
	for name, b := range ch.shards {
		out[manifest.ShardPath(ch.m.Path, name)] = b
	}
	return out
}

// shardFiles returns the tree paths of the shards of p's manifest whose
// root is blob h (as manifestBlobs noted them), none for an unsplit one.
func (g *gitRepo) shardFiles(p string, h gitdb.Hash) []string {
	var out []string
	for name := range g.shardsOf(h) {
		out = append(out, manifest.ShardPath(p, name))
	}
	return out
}

// staleShards returns the shard files of HEAD's manifests of worktree's
// files (prev's blobs) that their new manifests do not write.
func (g *gitRepo) staleShards(prev manifestList, worktree map[string]*chunked, writes map[string]gitdb.Blob) []string {
	var out []string
	for p := range worktree {
		h, _ := prev.find(p)
		for _, sp := range g.shardFiles(p, h) {
			if _, ok := writes[sp]; !ok {
				out = append(out, sp)
			}
		}
	}
	return out
}

// manifestsOf is what a commit of paths (and deleted) speaks for in the
// Git index: every manifest and shard when it commits the whole work tree
// (args empty), else those of the files it considered; prev and shards
// are HEAD's manifests and the shard files of its split ones (headList).
func manifestsOf(prev manifestList, shards []gitdb.TreeEntry, args, paths, deleted []string) gitdb.Settle {
	s := gitdb.Settle{Head: []gitdb.HeadFiles{{Dir: ManifestDir, Files: prev}, {Dir: manifest.ShardDir, Files: shards}}}
	if len(args) == 0 {
		s.Scope = func(mp string) bool {
			return strings.HasPrefix(mp, ManifestDir+"/") || strings.HasPrefix(mp, manifest.ShardDir+"/")
		}
		return s
	}
	in := make(map[string]bool, len(paths)+len(deleted))
	for _, p := range paths {
		in[p] = true
	}
	for _, p := range deleted {
		in[p] = true
	}
	s.Scope = func(mp string) bool {
		if p, ok := strings.CutPrefix(mp, ManifestDir+"/"); ok {
			return in[p]
		}
		// A shard's path is <ShardDir>/<file's path>/<shard name>: any
		// folder on the way may be the file's path.
		if rest, ok := strings.CutPrefix(mp, manifest.ShardDir+"/"); ok {
			for d := path.Dir(rest); d != "."; d = path.Dir(d) {
				if in[d] {
					return true
				}
			}
		}
		return false
	}
	return s
}
