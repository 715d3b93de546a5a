package diffscan

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
	"github.com/chunkvc/chunkvc/repo/internal/reach"
	"github.com/chunkvc/chunkvc/repo/internal/statcache"
)

// Git is what a diff reads of the repository's Git.
type Git interface {
	reach.Manifests
	Head() (*gitdb.Commit, error)
	Resolve(rev string) (*gitdb.Commit, error)
}

// Env is the repository a diff reads.
type Env struct {
	Git  Git
	Root string // the work tree, absolute
	// Tracked lists the tracked working files (slash paths from Root).
	Tracked func() ([]string, error)
	// StatCache loads the stat cache; a diff of the work tree saves the
	// digests it learnt into it.
	StatCache func() *statcache.Cache
	// Stat returns the stat cache's Stat of tracked path p (a file's
	// lstat, a dataset's summary of its members' stats).
	Stat func(p string) (statcache.Stat, error)
	// Peek chunks and hashes working file p as a commit would, storing
	// nothing, and returns its manifest, its stat and the bytes hashed.
	Peek func(ctx context.Context, p string, workers int) (*manifest.Manifest, statcache.Stat, int64, error)
	// FileAt returns a local file holding p as of commit ("" = the
	// working file), and what removes it (Repo.FileAt).
	FileAt func(ctx context.Context, commit, p string) (string, func(), error)
}

// Options selects what Run compares.
type Options struct {
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

// Run compares two versions of the tracked files (see Options).
// Working files are chunked and hashed but nothing is stored; a file whose
// stat-cache digest matches the old version's is not read at all.
func Run(ctx context.Context, env Env, opt Options) (*diff.Result, error) {
	j := &job{env: env, opt: opt, res: &diff.Result{From: opt.From, To: opt.To, Files: []diff.FileDiff{}}}
	if j.res.From == "" {
		j.res.From = "HEAD"
	}
	if j.res.To == "" {
		j.res.To = diff.WorkTree
	}
	var err error
	if j.opt.Paths, err = cleanScope(opt.Paths); err != nil {
		return nil, err
	}
	if err := j.resolveFrom(); err != nil {
		return nil, err
	}
	var pairs []pair
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

// job is one Run: resolveFrom reads the old side, revisionPairs or
// worktreePairs find the files that differ, compare describes each.
type job struct {
	env      Env
	opt      Options // Paths cleaned by cleanScope
	res      *diff.Result
	oldBlobs map[string]gitdb.Hash // the old side's manifests by path
}

// pair is one file's old and current manifests; nil where it is not.
type pair struct{ old, cur *manifest.Manifest }

// cleanScope returns paths without trailing slashes, each checked.
func cleanScope(paths []string) ([]string, error) {
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
func (j *job) resolveFrom() error {
	var fromC *gitdb.Commit
	var err error
	if j.opt.From == "" {
		fromC, err = j.env.Git.Head()
	} else {
		fromC, err = j.env.Git.Resolve(j.opt.From)
	}
	if err != nil {
		return err
	}
	if fromC != nil {
		j.res.FromCommit = fromC.Hash.String()
	}
	j.oldBlobs, err = j.env.Git.Manifests(fromC)
	return err
}

// readOld returns the old side's manifest of p.
func (j *job) readOld(p string) (*manifest.Manifest, error) {
	return j.env.Git.ReadManifest(j.oldBlobs[p], p)
}

// revisionPairs returns the files in scope whose manifests differ between
// the old side and revision To.
func (j *job) revisionPairs() ([]pair, error) {
	toC, err := j.env.Git.Resolve(j.opt.To)
	if err != nil {
		return nil, err
	}
	j.res.ToCommit = toC.Hash.String()
	newBlobs, err := j.env.Git.Manifests(toC)
	if err != nil {
		return nil, err
	}
	var pairs []pair
	for _, p := range unionKeys(j.oldBlobs, newBlobs) {
		if !inScope(p, j.opt.Paths) {
			continue
		}
		ho, inOld := j.oldBlobs[p]
		hn, inNew := newBlobs[p]
		if inOld && inNew && ho == hn {
			continue
		}
		var pr pair
		if inOld {
			if pr.old, err = j.readOld(p); err != nil {
				return nil, err
			}
		}
		if inNew {
			if pr.cur, err = j.env.Git.ReadManifest(hn, p); err != nil {
				return nil, err
			}
		}
		pairs = append(pairs, pr)
	}
	return pairs, nil
}

// pairRenames returns pairs with each added file paired, in order, with a
// deleted one of the same bytes (a rename), and that deleted one dropped;
// then each added file left with the deleted one of its format that
// shares the most of its chunk bytes, when that is at least half of them
// (a rewrite: a partition written again under a new name).
func pairRenames(pairs []pair) []pair {
	return pairRewrites(pairExact(pairs))
}

// minShared is the fraction of an added file's chunk bytes that a deleted
// file must hold for the two to be paired as a rewrite (git's rename
// detection also asks for half).
const minShared = 0.5

// pairRewrites pairs added files with the deleted files that share most
// of their chunk bytes, through one index of the deleted files' chunk IDs
// (a chunk held by several counts for the first), never reading data.
func pairRewrites(pairs []pair) []pair {
	owner := map[hashing.ID]int{} // chunk ID → index of a deleted file
	for i, pr := range pairs {
		if pr.cur != nil {
			continue
		}
		for _, c := range pr.old.Chunks {
			if _, ok := owner[c.ID]; !ok {
				owner[c.ID] = i
			}
		}
	}
	if len(owner) == 0 {
		return pairs
	}
	drop := map[int]bool{}
	for i, pr := range pairs {
		if pr.old != nil {
			continue
		}
		shared := map[int]int64{}
		var total int64
		for _, c := range pr.cur.Chunks {
			total += c.Size
			if j, ok := owner[c.ID]; ok && !drop[j] && pairs[j].old.Format == pr.cur.Format {
				shared[j] += c.Size
			}
		}
		best, most := -1, int64(0)
		for j, n := range shared {
			if n > most || (n == most && j < best) {
				best, most = j, n
			}
		}
		if best < 0 || float64(most) < minShared*float64(total) {
			continue
		}
		pairs[i].old = pairs[best].old
		drop[best] = true
	}
	return dropPairs(pairs, drop)
}

func dropPairs(pairs []pair, drop map[int]bool) []pair {
	out := make([]pair, 0, len(pairs)-len(drop))
	for i, pr := range pairs {
		if !drop[i] {
			out = append(out, pr)
		}
	}
	return out
}

// pairExact pairs added files with deleted ones of the same bytes.
func pairExact(pairs []pair) []pair {
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
	return dropPairs(pairs, drop)
}

// compare adds the difference of pr to the result, feature by feature
// for FlatGeobuf files when asked.
func (j *job) compare(ctx context.Context, pr pair) {
	fd := diff.Compare(pr.old, pr.cur)
	if j.opt.Features && fd.Status == diff.Modified && pr.old.Format == formats.FlatGeobuf && pr.cur.Format == formats.FlatGeobuf {
		if err := j.compareFeatures(ctx, &fd); err != nil {
			fd.Warnings = append(fd.Warnings, "features not compared: "+err.Error())
		}
	}
	j.res.Files = append(j.res.Files, fd)
}

// worktreePairs returns the files in scope whose working bytes differ
// from the old side: tracked files, then the old side's files that are no
// longer tracked.
func (j *job) worktreePairs(ctx context.Context) ([]pair, error) {
	files, err := j.env.Tracked()
	if err != nil {
		return nil, err
	}
	w := &worktreeScan{cache: j.env.StatCache()}
	// HEAD's manifests name bytes we know without reading, when From is
	// another revision.
	if j.opt.From != "" {
		head, err := j.env.Git.Head()
		if err != nil {
			return nil, err
		}
		if w.headBlobs, err = j.env.Git.Manifests(head); err != nil {
			return nil, err
		}
	}
	var pairs []pair
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
		pairs = append(pairs, pair{old, cur})
	}
	for _, p := range sortedKeys(j.oldBlobs) {
		if seen[p] || !inScope(p, j.opt.Paths) {
			continue
		}
		old, err := j.readOld(p)
		if err != nil {
			return nil, err
		}
		pairs = append(pairs, pair{old: old})
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
func (j *job) working(ctx context.Context, w *worktreeScan, p string, old *manifest.Manifest) (*manifest.Manifest, error) {
	st, err := j.env.Stat(p)
	if err != nil {
		return nil, err
	}
	if e, ok := w.cache.Lookup(p, st); ok {
		if old != nil && e.Digest == old.Digest {
			return nil, nil
		}
		if h, ok := w.headBlobs[p]; ok {
			hm, err := j.env.Git.ReadManifest(h, p)
			if err != nil {
				return nil, err
			}
			if hm.Digest == e.Digest {
				return hm, nil
			}
		}
	}
	m, st, hashed, err := j.env.Peek(ctx, p, j.opt.Workers)
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

// compareFeatures reads both versions of a FlatGeobuf fd (an old one is
// assembled from the store into a temp file) and compares them feature by
// feature (diff.FileDiff.CompareFeatures).
func (j *job) compareFeatures(ctx context.Context, fd *diff.FileDiff) error {
	read := func(commit, p string) ([]flatgeobuf.Feature, error) {
		name, cleanup, err := j.env.FileAt(ctx, commit, p)
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
	oldF, err := read(j.res.FromCommit, fd.Old().Path)
	if err != nil {
		return err
	}
	newF, err := read(j.res.ToCommit, fd.New().Path)
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
