package repo

import (
	"context"
	"os"
	"sort"
	"strings"

	"github.com/chunkvc/chunkvc/diff"
	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/formats/flatgeobuf"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
	"github.com/chunkvc/chunkvc/repo/internal/statcache"
)

// Git's diff driver for manifests: `chunkvc install` writes TextconvAttribute
// into .gitattributes and sets TextconvConfigKey to TextconvCommand, so that
// `git diff` and `git log -p` show `chunkvc diff-textconv` listings.
const (
	TextconvDriver    = "chunkvc"
	TextconvAttribute = ManifestDir + "/** diff=" + TextconvDriver
	TextconvConfigKey = "diff." + TextconvDriver + ".textconv"
	TextconvCommand   = "chunkvc diff-textconv"
)

// DiffOptions selects what Diff compares.
type DiffOptions struct {
	// From is the old side ("" = HEAD). To is the new side ("" = the
	// working tree). Both are Git revisions.
	From, To string
	// Paths limits the diff to these files or directories (slash paths
	// from the root); empty means every tracked file.
	Paths []string
	// Features compares FlatGeobuf files feature by feature (reading both
	// versions; an old one is assembled from the store into a temp file).
	Features bool
	Workers  int // hashing workers for working files; 0 = GOMAXPROCS
}

// Diff compares two versions of the tracked files (see DiffOptions).
// Working files are chunked and hashed but nothing is stored; a file whose
// stat-cache digest matches the old version's is not read at all.
func (r *Repo) Diff(ctx context.Context, opt DiffOptions) (*diff.Result, error) {
	if err := r.settlePatch(); err != nil {
		return nil, err
	}
	res := &diff.Result{From: opt.From, To: opt.To, Files: []diff.FileDiff{}}
	if res.From == "" {
		res.From = "HEAD"
	}
	if res.To == "" {
		res.To = diff.WorkTree
	}
	scope := make([]string, 0, len(opt.Paths))
	for _, p := range opt.Paths {
		p = strings.TrimSuffix(p, "/")
		if p != "." && p != "" {
			if err := manifest.CheckPath(p); err != nil {
				return nil, err
			}
		}
		scope = append(scope, p)
	}
	opt.Paths = scope
	var fromC *gitdb.Commit
	var err error
	if opt.From == "" {
		fromC, err = r.git.Head()
	} else {
		fromC, err = r.git.Resolve(opt.From)
	}
	if err != nil {
		return nil, err
	}
	if fromC != nil {
		res.FromCommit = fromC.Hash.String()
	}
	oldBlobs, err := r.git.manifestBlobs(fromC)
	if err != nil {
		return nil, err
	}
	readOld := func(p string) (*manifest.Manifest, error) {
		m, _, err := r.git.readManifestBlob(oldBlobs[p], p)
		return m, err
	}

	type pair struct{ old, cur *manifest.Manifest }
	var pairs []pair
	if opt.To != "" {
		toC, err := r.git.Resolve(opt.To)
		if err != nil {
			return nil, err
		}
		res.ToCommit = toC.Hash.String()
		newBlobs, err := r.git.manifestBlobs(toC)
		if err != nil {
			return nil, err
		}
		for _, p := range unionKeys(oldBlobs, newBlobs) {
			if !inScope(p, opt.Paths) {
				continue
			}
			ho, inOld := oldBlobs[p]
			hn, inNew := newBlobs[p]
			if inOld && inNew && ho == hn {
				continue
			}
			var pr pair
			if inOld {
				if pr.old, err = readOld(p); err != nil {
					return nil, err
				}
			}
			if inNew {
				if pr.cur, _, err = r.git.readManifestBlob(hn, p); err != nil {
					return nil, err
				}
			}
			pairs = append(pairs, pr)
		}
	} else {
		wt, err := r.worktreeManifests(ctx, opt, oldBlobs, readOld)
		if err != nil {
			return nil, err
		}
		for _, p := range wt.order {
			pairs = append(pairs, pair{wt.old[p], wt.cur[p]})
		}
	}

	// A deleted and an added file with the same bytes are a rename.
	deleted := map[hashing.ID][]int{}
	for i, pr := range pairs {
		if pr.cur == nil {
			deleted[pr.old.Digest] = append(deleted[pr.old.Digest], i)
		}
	}
	drop := map[int]bool{}
	for i, pr := range pairs {
		if pr.old != nil || len(deleted[pr.cur.Digest]) == 0 {
			continue
		}
		j := deleted[pr.cur.Digest][0]
		deleted[pr.cur.Digest] = deleted[pr.cur.Digest][1:]
		pairs[i].old = pairs[j].old
		drop[j] = true
	}
	for i, pr := range pairs {
		if drop[i] {
			continue
		}
		fd := diff.Compare(pr.old, pr.cur)
		if opt.Features && fd.Status == diff.Modified && pr.old.Format == formats.FlatGeobuf && pr.cur.Format == formats.FlatGeobuf {
			if err := r.compareFeatures(ctx, &fd, res.FromCommit, res.ToCommit); err != nil {
				fd.Warnings = append(fd.Warnings, "features not compared: "+err.Error())
			}
		}
		res.Files = append(res.Files, fd)
	}
	sort.Slice(res.Files, func(i, j int) bool { return res.Files[i].Path < res.Files[j].Path })
	return res, nil
}

type wtManifests struct {
	order    []string
	old, cur map[string]*manifest.Manifest
}

// worktreeManifests returns the old and current manifests of every tracked
// file in scope whose working bytes differ from the old side.
func (r *Repo) worktreeManifests(ctx context.Context, opt DiffOptions, oldBlobs map[string]gitdb.Hash, readOld func(string) (*manifest.Manifest, error)) (*wtManifests, error) {
	out := &wtManifests{old: map[string]*manifest.Manifest{}, cur: map[string]*manifest.Manifest{}}
	files, err := r.trackedFiles()
	if err != nil {
		return nil, err
	}
	// HEAD's manifests name bytes we know without reading, when From is
	// another revision.
	var headBlobs map[string]gitdb.Hash
	if opt.From != "" {
		head, err := r.git.Head()
		if err != nil {
			return nil, err
		}
		if headBlobs, err = r.git.manifestBlobs(head); err != nil {
			return nil, err
		}
	}
	cache := r.loadStatCache()
	dirty := false
	seen := map[string]bool{}
	for _, p := range files {
		if !inScope(p, opt.Paths) {
			continue
		}
		seen[p] = true
		var old *manifest.Manifest
		if _, ok := oldBlobs[p]; ok {
			if old, err = readOld(p); err != nil {
				return nil, err
			}
		}
		fi, err := os.Lstat(r.abs(p))
		if err != nil {
			return nil, err
		}
		st := statcache.StatOf(fi)
		var cur *manifest.Manifest
		if e, ok := cache.Lookup(p, st); ok {
			if old != nil && e.Digest == old.Digest {
				continue
			}
			if h, ok := headBlobs[p]; ok {
				hm, _, err := r.git.readManifestBlob(h, p)
				if err != nil {
					return nil, err
				}
				if hm.Digest == e.Digest {
					cur = hm
				}
			}
		}
		if cur == nil {
			m, st, hashed, err := r.peekFile(ctx, p, opt.Workers)
			if err != nil {
				return nil, err
			}
			e := statcache.Entry{Stat: st, Digest: m.Digest, Hashed: hashed}
			if prev, ok := cache.LayoutOf(p, st); ok && prev.Digest == m.Digest {
				e.Layout = prev.Layout
			}
			if old != nil && old.Digest == m.Digest {
				e.Layout = old.Layout
			}
			cache.Put(p, e)
			dirty = true
			cur = m
		}
		if old != nil && cur.Digest == old.Digest {
			continue
		}
		out.order = append(out.order, p)
		out.old[p], out.cur[p] = old, cur
	}
	for _, p := range sortedKeys(oldBlobs) {
		if seen[p] || !inScope(p, opt.Paths) {
			continue
		}
		old, err := readOld(p)
		if err != nil {
			return nil, err
		}
		out.order = append(out.order, p)
		out.old[p] = old
	}
	if dirty {
		_ = cache.Save()
	}
	return out, nil
}

// peekFile is chunkFile without the store: it enumerates and hashes working
// file p and returns the manifest a commit would write.
func (r *Repo) peekFile(ctx context.Context, p string, workers int) (*manifest.Manifest, statcache.Stat, int64, error) {
	ch, err := r.chunkFile(ctx, p, nil, version{}, nil, workers)
	if err != nil {
		return nil, statcache.Stat{}, 0, err
	}
	return ch.m, ch.stat, ch.hashed, nil
}

// FileAt returns a local file holding p as of commit ("" = the working
// file itself). Other versions are assembled from the store into a temp
// file that cleanup removes.
func (r *Repo) FileAt(ctx context.Context, commit, p string) (name string, cleanup func(), err error) {
	if commit == "" {
		if err := manifest.CheckPath(p); err != nil {
			return "", nil, err
		}
		return r.abs(p), func() {}, nil
	}
	t := r.gitTree()
	defer t.Close()
	f, err := t.Create("chunkvc/diff")
	if err != nil {
		return "", nil, err
	}
	cleanup = f.Abort
	_, err = r.Cat(ctx, commit, p, f.File)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		cleanup()
		return "", nil, err
	}
	return f.Name(), cleanup, nil
}

// compareFeatures reads both versions of a FlatGeobuf fd (an old one is
// assembled from the store into a temp file) and compares them feature by
// feature (diff.FileDiff.CompareFeatures).
func (r *Repo) compareFeatures(ctx context.Context, fd *diff.FileDiff, fromCommit, toCommit string) error {
	read := func(commit, p string) ([]flatgeobuf.Feature, error) {
		name, cleanup, err := r.FileAt(ctx, commit, p)
		if err != nil {
			return nil, err
		}
		defer cleanup()
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return nil, err
		}
		return flatgeobuf.Features(f, fi.Size())
	}
	oldF, err := read(fromCommit, fd.Old().Path)
	if err != nil {
		return err
	}
	newF, err := read(toCommit, fd.New().Path)
	if err != nil {
		return err
	}
	fd.CompareFeatures(oldF, newF)
	return nil
}

func inScope(p string, scope []string) bool {
	if len(scope) == 0 {
		return true
	}
	for _, s := range scope {
		if s == "" || s == "." || p == s || strings.HasPrefix(p, s+"/") {
			return true
		}
	}
	return false
}

func unionKeys(a, b map[string]gitdb.Hash) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range []map[string]gitdb.Hash{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}

func sortedKeys(m map[string]gitdb.Hash) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
