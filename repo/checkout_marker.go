package repo

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

// unfinishedRel is the record of files a checkout set out to write and did
// not, relative to .git.
const unfinishedRel = "chunkvc/checkout-unfinished"

// unfinished is .git/chunkvc/checkout-unfinished. Checkout writes it,
// durably, before it writes the first file, listing every file it is to
// write; a file leaves the list only once it is written (or found up to
// date), and one that fails stays with its error. A checkout killed at
// any point therefore leaves the files it did not write listed. Until a
// checkout writes them, status shows such a file that is missing as
// "not-checked-out" and commit does not take its absence for a deletion:
// it is not there because it never arrived, not because anyone removed it.
// An entry for a file that is there is harmless (it only speaks for
// missing files) and goes with the next checkout of it.
type unfinished struct {
	Files map[string]unfinishedEntry `json:"files"`
	dirty bool
}

type unfinishedEntry struct {
	Commit string `json:"commit"`          // the commit the checkout was writing
	Error  string `json:"error,omitempty"` // why it failed; "" if it did not get that far
}

// errUnfinishedDamaged: the record cannot be read, so which files are
// missing for want of a checkout is not known.
var errUnfinishedDamaged = errors.New("damaged")

// loadUnfinished reads the record; none is an empty one.
func (r *Repo) loadUnfinished() (*unfinished, error) {
	u := &unfinished{Files: map[string]unfinishedEntry{}}
	t := r.gitTree()
	defer t.Close()
	data, err := t.ReadFile(unfinishedRel, maxStateFile)
	if errors.Is(err, fs.ErrNotExist) {
		return u, nil
	}
	if err == nil {
		if err = json.Unmarshal(data, u); err != nil || u.Files == nil {
			err = errUnfinishedDamaged
		}
	}
	if err != nil {
		// Failing closed: without it a missing file would be committed
		// as deleted.
		return nil, fmt.Errorf("%s: %w; it lists the files an interrupted checkout did not write: run chunkvc checkout, after removing it", t.Show(unfinishedRel), err)
	}
	return u, nil
}

func (u *unfinished) add(p, commit, why string) {
	u.Files[p] = unfinishedEntry{Commit: commit, Error: why}
	u.dirty = true
}

func (u *unfinished) done(p string) {
	if _, ok := u.Files[p]; ok {
		delete(u.Files, p)
		u.dirty = true
	}
}

func (u *unfinished) has(p string) bool {
	_, ok := u.Files[p]
	return ok
}

// save writes the record atomically and durably (fsync), or removes it
// when it is empty; it does nothing if nothing changed.
func (r *Repo) saveUnfinished(u *unfinished) error {
	if !u.dirty {
		return nil
	}
	t := r.gitTree()
	defer t.Close()
	if len(u.Files) == 0 {
		if err := t.Remove(unfinishedRel); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		u.dirty = false
		return nil
	}
	data, err := json.Marshal(u)
	if err != nil {
		return err
	}
	if err := t.WriteFile(unfinishedRel, data, true); err != nil {
		return err
	}
	u.dirty = false
	return nil
}

// NotCheckedOutNote says why the committed files ps, missing from the work
// tree, are not recorded as deleted.
func NotCheckedOutNote(ps []string) string {
	list := slices.Sorted(slices.Values(ps))
	more := ""
	if len(list) > 5 {
		more = fmt.Sprintf(" and %d more", len(list)-5)
		list = list[:5]
	}
	what := fmt.Sprintf("%d committed files are", len(ps))
	if len(ps) == 1 {
		what = "1 committed file is"
	}
	return fmt.Sprintf("%s not checked out (a checkout did not write them), so not recorded as deleted: %s%s; chunkvc checkout writes them", what, strings.Join(list, ", "), more)
}
