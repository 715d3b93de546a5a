package repo

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"sort"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/statcache"
)

// commitScope returns the tracked files to consider, the previously
// committed ones that are gone from the work tree, and those missing
// because a checkout did not write them (un; not deleted): of args, or
// with no args of listed, the tracked files of the whole work tree.
func (r *Repo) commitScope(args, listed []string, prev manifestList, cache *statcache.Cache, un *unfinished) (paths, deleted, notOut []string, err error) {
	if len(args) == 0 {
		deleted, notOut = goneFrom(listed, prev, cache, un)
		return listed, deleted, notOut, nil
	}
	present := map[string]bool{}
	for _, p := range args {
		if err := manifest.CheckPath(p); err != nil {
			return nil, nil, nil, err
		}
		if d, ok := r.Config.DatasetOf(p); ok && d != p {
			return nil, nil, nil, fmt.Errorf("%s is a file of dataset %s, which is committed as a whole: chunkvc commit %s", p, d, d)
		}
		_, inPrev := prev.find(p)
		if _, err := os.Lstat(r.abs(p)); errors.Is(err, fs.ErrNotExist) {
			switch {
			case inPrev && cache.IsLazy(p):
				return nil, nil, nil, fmt.Errorf("%s is not checked out (lazy clone): chunkvc checkout -- %s first", p, p)
			case inPrev && un.has(p):
				return nil, nil, nil, fmt.Errorf("%s is not checked out (a checkout did not finish), so it cannot be committed as deleted: chunkvc checkout -- %s first", p, p)
			case inPrev:
				deleted = append(deleted, p)
				continue
			}
			return nil, nil, nil, fmt.Errorf("%s: no such file, and not in HEAD", p)
		}
		if !r.Config.IsTracked(p) && !r.Config.IsDataset(p) && !inPrev {
			return nil, nil, nil, fmt.Errorf("%s is not tracked (add a pattern with chunkvc track)", p)
		}
		if !present[p] {
			present[p] = true
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	return paths, deleted, nil, nil
}

// siblingWarnings flags added or modified Parquet files whose schema, CRS or
// geometry types differ from another Parquet file in the same directory:
// the classic "two incompatible schemas in one partitioned lake" mistake.
// Siblings not read during this commit are read from HEAD on demand.
func (r *Repo) siblingWarnings(files []FileResult, current map[string]*manifest.Manifest, prev manifestList) error {
	if !slices.ContainsFunc(files, func(f FileResult) bool {
		return (f.Status == FileAdded || f.Status == FileModified) && f.Format == formats.Parquet
	}) {
		return nil // nothing to compare: no folder is grouped
	}
	byDir := map[string][]string{}
	for _, f := range files {
		byDir[path.Dir(f.Path)] = append(byDir[path.Dir(f.Path)], f.Path)
	}
	load := func(q string) (*manifest.Manifest, error) {
		h, _ := prev.find(q)
		if m, ok := current[q]; ok || h.IsZero() {
			return m, nil
		}
		m, _, err := r.git.readManifestBlob(h, q)
		current[q] = m
		return m, err
	}
	for i := range files {
		f := &files[i]
		m := current[f.Path]
		if m == nil || m.Format != formats.Parquet || (f.Status != FileAdded && f.Status != FileModified) {
			continue
		}
		// Not the whole geo block: its bbox differs between partitions.
		for _, field := range []string{"schema", "crs", "geometry_types"} {
			for _, q := range byDir[path.Dir(f.Path)] {
				if q == f.Path {
					continue
				}
				sib, err := load(q)
				if err != nil {
					return err
				}
				if sib == nil || sib.Format != formats.Parquet {
					continue
				}
				if a, b := m.SummaryValue(field), sib.SummaryValue(field); a != b {
					f.Warnings = append(f.Warnings, fmt.Sprintf("%s %s differs from sibling %s (%s): one dataset, two incompatible layouts?", field, orNone(a), q, orNone(b)))
					break
				}
			}
		}
	}
	return nil
}

// orNone spells an absent summary value in a message.
func orNone(v string) string {
	if v == "" {
		return "(none)"
	}
	return v
}
