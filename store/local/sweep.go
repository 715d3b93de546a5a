package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chunkvc/chunkvc/store"
)

var _ store.Sweeper = (*Store)(nil)

// Sweep removes the debris of interrupted writes that last changed before
// cutoff: a batch's temp pack in tmp/, a pack in packs/ without its index
// (renamed in, its index not yet written), and the temp files (.put-*) of
// loose objects, indexes and named objects. A file's age is the later of
// its modification and status change times, so that a pack renamed in a
// moment ago is young whatever its modification time. Files that vanish
// meanwhile are not counted. Like DeleteMany, it expects the caller to hold
// the repository's lock; writers of other repositories sharing the store
// are protected by cutoff only.
func (s *Store) Sweep(ctx context.Context, cutoff time.Time, dryRun bool) (store.Debris, error) {
	var d store.Debris
	var errs []error
	take := func(p string, fi fs.FileInfo) {
		if !fi.Mode().IsRegular() || !changed(fi).Before(cutoff) {
			return
		}
		if !dryRun {
			if err := os.Remove(p); err != nil {
				if !errors.Is(err, fs.ErrNotExist) {
					errs = append(errs, err)
				}
				return
			}
		}
		d.Files++
		d.Bytes += fi.Size()
	}
	// each calls fn for the entries of dir with their info.
	each := func(dir string, fn func(name string, fi fs.FileInfo)) error {
		ents, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, e := range ents {
			if err := ctx.Err(); err != nil {
				return err
			}
			fi, err := e.Info()
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return err
			}
			fn(e.Name(), fi)
		}
		return nil
	}
	tmp := filepath.Join(s.root, TmpDir)
	if err := each(tmp, func(name string, fi fs.FileInfo) {
		if strings.HasPrefix(name, "pack-") && strings.HasSuffix(name, ".tmp") {
			take(filepath.Join(tmp, name), fi)
		}
	}); err != nil {
		return d, fmt.Errorf("sweep %s: %w", s.root, err)
	}
	if err := s.sweepPacks(each, take); err != nil {
		return d, fmt.Errorf("sweep %s: %w", s.root, err)
	}
	temp := func(dir string) func(string, fs.FileInfo) {
		return func(name string, fi fs.FileInfo) {
			if strings.HasPrefix(name, ".put-") {
				take(filepath.Join(dir, name), fi)
			}
		}
	}
	fans, err := os.ReadDir(s.root)
	if err != nil {
		return d, fmt.Errorf("sweep %s: %w", s.root, err)
	}
	for _, fan := range fans {
		if fan.IsDir() && isFanOut(fan.Name()) {
			dir := filepath.Join(s.root, fan.Name())
			if err := each(dir, temp(dir)); err != nil {
				return d, fmt.Errorf("sweep %s: %w", s.root, err)
			}
		}
	}
	err = filepath.WalkDir(filepath.Join(s.root, NamedDir), func(p string, e fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || !e.IsDir() {
			return err
		}
		return each(p, temp(p))
	})
	if err != nil {
		return d, fmt.Errorf("sweep %s: %w", s.root, err)
	}
	if err := errors.Join(errs...); err != nil {
		return d, fmt.Errorf("sweep %s: %w", s.root, err)
	}
	return d, nil
}

// sweepPacks hands take the temp files of packs/ and the packs there
// without an index.
func (s *Store) sweepPacks(each func(string, func(string, fs.FileInfo)) error, take func(string, fs.FileInfo)) error {
	dir := filepath.Join(s.root, PackDir)
	type seen struct {
		fi       fs.FileInfo
		hasIndex bool
	}
	packs := map[string]*seen{}
	err := each(dir, func(name string, fi fs.FileInfo) {
		switch {
		case strings.HasPrefix(name, ".put-"):
			take(filepath.Join(dir, name), fi)
		case strings.HasSuffix(name, ".pack") && isPackName(strings.TrimSuffix(name, ".pack")):
			p := packs[strings.TrimSuffix(name, ".pack")]
			if p == nil {
				p = &seen{}
				packs[strings.TrimSuffix(name, ".pack")] = p
			}
			p.fi = fi
		case strings.HasSuffix(name, ".idx"):
			p := packs[strings.TrimSuffix(name, ".idx")]
			if p == nil {
				p = &seen{}
				packs[strings.TrimSuffix(name, ".idx")] = p
			}
			p.hasIndex = true
		}
	})
	if err != nil {
		return err
	}
	for name, p := range packs {
		if p.fi == nil || p.hasIndex {
			continue
		}
		// The index may have been renamed in since the folder was read:
		// a pack is debris only if it still has none.
		if _, err := os.Lstat(s.packPath(name, ".idx")); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if fi, err := os.Lstat(s.packPath(name, ".pack")); err == nil {
			take(s.packPath(name, ".pack"), fi)
		}
	}
	return nil
}
