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
	TextconvAttribute = ".chunkvc/** diff=" + TextconvDriver // manifests, roots and shards
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
	j := &diffJob{r: r, opt: opt, res: &diff.Result{From: opt.From, To: opt.To, Files: []diff.FileDiff{}}}
	if j.res.From == "" {
		j.res.From = "HEAD"
	}
	if j.res.To == "" {
		j.res.To = diff.WorkTree
	}
	var err error
	if j.opt.Paths, err = diffScope(opt.Paths); err != nil {
		return nil, err
	}
	if err := j.resolveFrom(); err != nil {
		return nil, err
	}
	var pairs []diffPair
	if opt.To != "" {
		pairs, err = j.revisionPairs()
	} else {
		pairs, err = j.worktreePairs(ctx)
	}
	if err != nil {
		return nil, err
	}
	for _, pr := range pairRenames(pairs) {
		j.compare(ctx, pr)
	}
	sort.Slice(j.res.Files, func(i, k int) bool { return j.res.Files[i].Path < j.res.Files[k].Path })
	return j.res, nil
}

// diffJob is one Diff: resolveFrom reads the old side, revisionPairs or
// worktreePairs find the files that differ, compare describes each.
type diffJob struct {
	r        *Repo
	opt      DiffOptions // Paths cleaned by diffScope
	res      *diff.Result
	oldBlobs map[string]gitdb.Hash // the old side's manifests by path
}

// diffPair is one file's old and current manifests; nil where it is not.
type diffPair struct{ old, cur *manifest.Manifest }

// diffScope returns paths without trailing slashes, each checked.
func diffScope(paths []string) ([]string, error) {
	scope := make([]string, 0, len(paths))
	for _, p := range paths {
		p = strings.TrimSuffix(p, "/")
		if p != "." && p != "" {
			if err := manifest.CheckPath(p); err != nil {
				return nil, err
			}
		}
		scope = append(scope, p)
	}
	return scope, nil
}

// resolveFrom reads the old side's commit and manifest tree.
func (j *diffJob) resolveFrom() error {
	var fromC *gitdb.Commit
	var err error
	if j.opt.From == "" {
		fromC, err = j.r.git.Head()
	} else {
		fromC, err = j.r.git.Resolve(j.opt.From)
	}
	if err != nil {
		return err
	}
	if fromC != nil {
		j.res.FromCommit = fromC.Hash.String()
	}
	j.oldBlobs, err = j.r.git.manifestBlobs(fromC)
	return err
}

// readOld returns the old side's manifest of p.
func (j *diffJob) readOld(p string) (*manifest.Manifest, error) {
	m, _, err := j.r.git.readManifestBlob(j.oldBlobs[p], p)
	return m, err
}

// revisionPairs returns the files in scope whose manifests differ between
// the old side and revision To.
func (j *diffJob) revisionPairs() ([]diffPair, error) {
	toC, err := j.r.git.Resolve(j.opt.To)
	if err != nil {
		return nil, err
	}
	j.res.ToCommit = toC.Hash.String()
	newBlobs, err := j.r.git.manifestBlobs(toC)
	if err != nil {
		return nil, err
	}
	var pairs []diffPair
	for _, p := range unionKeys(j.oldBlobs, newBlobs) {
		if !inScope(p, j.opt.Paths) {
			continue
		}
		ho, inOld := j.oldBlobs[p]
		hn, inNew := newBlobs[p]
		if inOld && inNew && ho == hn {
			continue
		}
		var pr diffPair
		if inOld {
			if pr.old, err = j.readOld(p); err != nil {
				return nil, err
			}
		}
		if inNew {
			if pr.cur, _, err = j.r.git.readManifestBlob(hn, p); err != nil {
				return nil, err
			}
		}
		pairs = append(pairs, pr)
	}
	return pairs, nil
}

// pairRenames returns pairs with each added file paired, in order, with a
// deleted one of the same bytes (a rename), and that deleted one dropped.
func pairRenames(pairs []diffPair) []diffPair {
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
	out := make([]diffPair, 0, len(pairs)-len(drop))
	for i, pr := range pairs {
		if !drop[i] {
			out = append(out, pr)
		}
	}
	return out
}

// compare adds the difference of pr to the result, feature by feature
// for FlatGeobuf files when asked.
func (j *diffJob) compare(ctx context.Context, pr diffPair) {
	fd := diff.Compare(pr.old, pr.cur)
	if j.opt.Features && fd.Status == diff.Modified && pr.old.Format == formats.FlatGeobuf && pr.cur.Format == formats.FlatGeobuf {
		if err := j.r.compareFeatures(ctx, &fd, j.res.FromCommit, j.res.ToCommit); err != nil {
			fd.Warnings = append(fd.Warnings, "features not compared: "+err.Error())
		}
	}
	j.res.Files = append(j.res.Files, fd)
}

// worktreePairs returns the files in scope whose working bytes differ
// from the old side: tracked files, then the old side's files that are no
// longer tracked.
func (j *diffJob) worktreePairs(ctx context.Context) ([]diffPair, error) {
	files, err := j.r.trackedFiles()
	if err != nil {
		return nil, err
	}
	w := &worktreeScan{cache: j.r.loadStatCache()}
	// HEAD's manifests name bytes we know without reading, when From is
	// another revision.
	if j.opt.From != "" {
		head, err := j.r.git.Head()
		if err != nil {
			return nil, err
		}
		if w.headBlobs, err = j.r.git.manifestBlobs(head); err != nil {
			return nil, err
		}
	}
	var pairs []diffPair
	seen := map[string]bool{}
	for _, p := range files {
		if !inScope(p, j.opt.Paths) {
			continue
		}
		seen[p] = true
		var old *manifest.Manifest
		if _, ok := j.oldBlobs[p]; ok {
			if old, err = j.readOld(p); err != nil {
				return nil, err
			}
		}
		cur, err := j.working(ctx, w, p, old)
		if err != nil {
			return nil, err
		}
		if cur == nil || (old != nil && cur.Digest == old.Digest) {
			continue
		}
		pairs = append(pairs, diffPair{old, cur})
	}
	for _, p := range sortedKeys(j.oldBlobs) {
		if seen[p] || !inScope(p, j.opt.Paths) {
			continue
		}
		old, err := j.readOld(p)
		if err != nil {
			return nil, err
		}
		pairs = append(pairs, diffPair{old: old})
	}
	if w.dirty {
		_ = w.cache.Save()
	}
	return pairs, nil
}

// worktreeScan is what worktreePairs knows beyond the old side.
type worktreeScan struct {
	cache     *statcache.Cache
	dirty     bool                  // cache changed
	headBlobs map[string]gitdb.Hash // HEAD's manifests, when From is not HEAD
}

// working returns the manifest of working file p, or nil when the stat
// cache vouches that its bytes are old's: from HEAD's manifest when the
// cache says it holds those bytes, else by chunking and hashing it (and
// telling the cache).
func (j *diffJob) working(ctx context.Context, w *worktreeScan, p string, old *manifest.Manifest) (*manifest.Manifest, error) {
	fi, err := os.Lstat(j.r.abs(p))
	if err != nil {
		return nil, err
	}
	st := statcache.StatOf(fi)
	if e, ok := w.cache.Lookup(p, st); ok {
		if old != nil && e.Digest == old.Digest {
			return nil, nil
		}
		if h, ok := w.headBlobs[p]; ok {
			hm, _, err := j.r.git.readManifestBlob(h, p)
			if err != nil {
				return nil, err
			}
			if hm.Digest == e.Digest {
				return hm, nil
			}
		}
	}
	m, st, hashed, err := j.r.peekFile(ctx, p, j.opt.Workers)
	if err != nil {
		return nil, err
	}
	e := statcache.Entry{Stat: st, Digest: m.Digest, Hashed: hashed}
	if prev, ok := w.cache.LayoutOf(p, st); ok && prev.Digest == m.Digest {
		e.Layout = prev.Layout
	}
	if old != nil && old.Digest == m.Digest {
		e.Layout = old.Layout
	}
	w.cache.Put(p, e)
	w.dirty = true
	return m, nil
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
