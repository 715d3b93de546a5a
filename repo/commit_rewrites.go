package repo

import (
	"github.com/chunkvc/chunkvc/diff"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/diffscan"
)

// pairRewrites names, on each added file of the commit that a deleted
// file holds most of (diffscan.Rewrites: a partition rewritten under a
// new name, a compaction), the file it was rewritten from and the bytes
// they share. Statuses stay added and deleted, for policies and scripts
// that read them; the deleted manifests are read only when the commit
// adds files too.
func (j *commitJob) pairRewrites() error {
	var added []*manifest.Manifest
	var ai []int
	var deleted []*manifest.Manifest
	for i, f := range j.res.Files {
		if f.Status == FileAdded && j.current[f.Path] != nil {
			added, ai = append(added, j.current[f.Path]), append(ai, i)
		}
	}
	if len(added) == 0 || len(j.deleted) == 0 {
		return nil
	}
	for _, p := range j.deleted {
		h, _ := j.prev.find(p)
		m, _, err := j.r.git.readManifestBlob(h, p)
		if err != nil {
			return err
		}
		deleted = append(deleted, m)
	}
	for k, d := range diffscan.Rewrites(deleted, added) {
		if d < 0 {
			continue
		}
		f := &j.res.Files[ai[k]]
		f.RewrittenFrom, f.SharedBytes = deleted[d].Path, diff.SharedBytes(added[k], manifest.Diff(deleted[d], added[k]))
	}
	return nil
}
