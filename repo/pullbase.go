package repo

import (
	"errors"
	"io/fs"
	"slices"
	"strings"

	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
)

// pullBaseRel is .git/chunkvc/pull-base: the commit HEAD held when a pull
// began, written before git moves HEAD and removed once a checkout has
// written every file. A pull killed between the two leaves working files
// that hold that commit's versions while HEAD names newer ones; the next
// checkout knows them for stored bytes, not unsaved work.
const pullBaseRel = "chunkvc/pull-base"

// setPullBase records h as the commit a pull starts from, unless an
// unfinished pull's record is there: the working files may still hold the
// versions of that one's base.
// It reports whether it wrote one.
func (r *Repo) setPullBase(h gitdb.Hash) (bool, error) {
	gt := r.gitTree()
	defer gt.Close()
	if _, err := gt.Lstat(pullBaseRel); err == nil {
		return false, nil
	}
	return true, gt.WriteFile(pullBaseRel, []byte(h.String()+"\n"), true)
}

// clearPullBase removes the record, if any.
func (r *Repo) clearPullBase() error {
	gt := r.gitTree()
	defer gt.Close()
	if err := gt.Remove(pullBaseRel); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// maxPullChain bounds how many commits back from HEAD an unfinished pull's
// versions are looked for.
const maxPullChain = 1000

// pullBaseBlobs returns, per path, the manifests of every commit from the
// one an unfinished pull started from up to HEAD's parent (first parents):
// pulls killed one after another each moved HEAD and may each have written
// some files, so a working file may hold any of those versions. It returns
// nil when no pull is unfinished. A record that does not name an ancestor
// of HEAD this repository has is ignored: it only ever widens what a
// checkout may overwrite to bytes that are stored.
func (r *Repo) pullBaseBlobs() (map[string][]gitdb.Hash, error) {
	gt := r.gitTree()
	defer gt.Close()
	b, err := gt.ReadFile(pullBaseRel, 64)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	base, err := gitdb.ParseHash(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, nil
	}
	c, err := r.git.Head()
	if err != nil || c == nil {
		return nil, err
	}
	out := map[string][]gitdb.Hash{}
	for range maxPullChain {
		if len(c.ParentHashes) == 0 {
			return nil, nil // base is no ancestor: ignore the record
		}
		if c, err = r.git.ReadCommit(c.ParentHashes[0]); err != nil {
			return nil, nil
		}
		blobs, err := r.git.manifestBlobs(c)
		if err != nil {
			return nil, err
		}
		for p, h := range blobs {
			if !slices.Contains(out[p], h) {
				out[p] = append(out[p], h)
			}
		}
		if c.Hash == base {
			return out, nil
		}
	}
	return nil, nil
}
