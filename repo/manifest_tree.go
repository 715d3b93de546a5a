package repo

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/chunkvc/chunkvc/repo/internal/confine"
)

// checkManifestTree is commit's look at the work tree before the Git
// commit: once the manifests in remove (slash paths from the root) are
// gone, every manifest in write must have a place. A tracked file replaced
// by a folder of tracked files, as git sees it the file's deletion and new
// files, moves manifests where a manifest file was (or the reverse);
// that works. Anything else in the way is refused here, with nothing
// committed, rather than found after the commit.
func (r *Repo) checkManifestTree(write, remove []string) error {
	gone := make(map[string]bool, len(remove))
	for _, p := range remove {
		gone[p] = true
	}
	inWay := func(p, what string) error {
		return fmt.Errorf("%w: cannot write %s: %s is in the way (move it)", ErrLocalChanges, p, what)
	}
	for _, p := range write {
		for d := path.Dir(p); !isManifestRoot(d); d = path.Dir(d) {
			fi, err := os.Lstat(r.abs(d))
			switch {
			case errors.Is(err, fs.ErrNotExist), err == nil && fi.IsDir():
			case err != nil:
				return err
			case !gone[d]:
				return inWay(p, d)
			}
		}
		fi, err := os.Lstat(r.abs(p))
		if err != nil || !fi.IsDir() {
			continue // none, or a file to replace
		}
		err = filepath.WalkDir(r.abs(p), func(q string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			rel, err := filepath.Rel(r.Root, q)
			if err != nil {
				return err
			}
			if rel = filepath.ToSlash(rel); !gone[rel] {
				return inWay(p, rel)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// removeManifests removes the manifests of deleted files (slash paths from
// the root) through wt, and the folders under ManifestDir that this leaves
// empty, so that a manifest can take the place of a folder.
func removeManifests(wt *confine.Tree, remove []string) error {
	for _, p := range remove {
		if err := wt.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		for d := path.Dir(p); !isManifestRoot(d); d = path.Dir(d) {
			if wt.Remove(d) != nil {
				break // not empty, or already gone
			}
		}
	}
	return nil
}
