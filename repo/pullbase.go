package repo

import (
	"errors"
	"io/fs"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

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
func (r *Repo) setPullBase(h plumbing.Hash) (bool, error) {
	gt := r.gitTree()
	defer gt.close()
	if _, err := gt.lstat(pullBaseRel); err == nil {
		return false, nil
	}
	return true, gt.writeFile(pullBaseRel, []byte(h.String()+"\n"), true)
}

// clearPullBase removes the record, if any.
func (r *Repo) clearPullBase() error {
	gt := r.gitTree()
	defer gt.close()
	if err := gt.remove(pullBaseRel); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// pullBaseBlobs returns the manifests of the commit a pull started from,
// or nil when no pull is unfinished. A record that does not name a commit
// this repository has is ignored: it only ever widens what a checkout may
// overwrite to bytes that are stored.
func (r *Repo) pullBaseBlobs() (map[string]plumbing.Hash, error) {
	gt := r.gitTree()
	defer gt.close()
	b, err := gt.readFile(pullBaseRel, 64)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	h, err := gitdb.ParseHash(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, nil
	}
	c, err := r.git.r.CommitObject(plumbing.Hash(h))
	if err != nil {
		return nil, nil
	}
	return r.git.manifestBlobs(c)
}
