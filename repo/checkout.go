package repo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/formats/zarr"
	"github.com/chunkvc/chunkvc/geom"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/internal/progress"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/boxsel"
	"github.com/chunkvc/chunkvc/repo/internal/confine"
	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
	"github.com/chunkvc/chunkvc/repo/internal/statcache"
)

// CheckoutOptions configures Checkout.
type CheckoutOptions struct {
	Rev   string   // "" = HEAD
	Paths []string // slash paths; empty = every file in Rev
	// Force overwrites working files whose bytes the store does not hold.
	Force    bool
	Progress progress.Counter
	// BBox, when set, materialises only what meets the box (in BBoxCRS,
	// "" = each file's own CRS): a TIFF is written with only the tiles whose
	// footprint meets the box (the others sparse) and recorded as partial,
	// so status shows it and commit refuses it; for Parquet and FlatGeobuf
	// the chunks that meet the box (whole row groups for Parquet) are read
	// into the read cache and no file is written. Other formats are refused.
	BBox    *geom.BBox
	BBoxCRS string
}

// CheckoutFile reports one file.
type CheckoutFile struct {
	Path   string     `json:"path"`
	Status FileStatus `json:"status"` // written, up-to-date, partial, prefetched
	Size   int64      `json:"size"`   // bytes written (partial: the partial file's size)
	// FullSize is the size of the whole version, for partial and
	// prefetched files.
	FullSize int64 `json:"full_size,omitempty"`
	AssembleStats
}

// CheckoutResult reports a checkout.
type CheckoutResult struct {
	Commit string         `json:"commit"`
	Files  []CheckoutFile `json:"files"`
	// Failed lists the files that were not written, each with why; every
	// other file was. They stay in .git/chunkvc/checkout-unfinished until
	// a checkout writes them.
	Failed []CheckoutFailure `json:"failed,omitempty"`
	// Stages are the checkout's steps: plan (read the manifests and what
	// the work tree holds; items: files considered) and write (assemble
	// and write; items: files written, bytes_in fetched from the store,
	// bytes_out written).
	Stages []Stage `json:"stages,omitempty"`
	// Merged is the merge a pull made of a branch that had diverged from
	// its upstream.
	Merged *MergeRun `json:"merged,omitempty"`
}

// CheckoutFailure is a file a checkout did not write.
type CheckoutFailure struct {
	Path  string `json:"path"`
	Error string `json:"error"`
}

// ErrCheckoutIncomplete means a checkout wrote some files but not all of
// them; the error also wraps each file's own error.
var ErrCheckoutIncomplete = errors.New("checkout did not write every file")

// checkoutError lists the files a checkout did not write.
type checkoutError struct {
	failed []fileError
	total  int
}

type fileError struct {
	path string
	err  error
}

func (e *checkoutError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d of %d could not be written (the others were checked out; commit does not take a missing one for deleted until a checkout writes it)", ErrCheckoutIncomplete, len(e.failed), e.total)
	for _, f := range e.failed {
		fmt.Fprintf(&b, "\n  %s: %v", f.path, f.err)
	}
	return b.String()
}

func (e *checkoutError) Unwrap() []error {
	errs := []error{ErrCheckoutIncomplete}
	for _, f := range e.failed {
		errs = append(errs, f.err)
	}
	return errs
}

// Checkout writes the tracked files as recorded at Rev into the work tree,
// without moving HEAD (like `git checkout REV -- PATH`). Each file is
// assembled into a temp file beside its target, every chunk and the whole
// file verified, then renamed into place; chunks already present in the
// working file are reused. A working file whose bytes are not stored
// anywhere (uncommitted work) is not overwritten unless Force is set: that
// refusal comes before anything is written.
//
// A file that cannot be written (a manifest that does not decode, a path
// through a symbolic link, a chunk no store has) does not stop the others:
// the checkout goes on, then returns an error that is
// ErrCheckoutIncomplete and lists them. Before the first file is written,
// every file it is to write is recorded in .git/chunkvc/checkout-unfinished
// (see unfinished); each leaves that record once written, so a checkout
// that fails or is killed leaves its unwritten files there.
func (r *Repo) Checkout(ctx context.Context, opt CheckoutOptions) (*CheckoutResult, error) {
	unlock, err := r.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	clock := startStages()
	clock.watch(r.Store)
	c, err := r.git.Resolve(opt.Rev)
	if err != nil {
		return nil, err
	}
	blobs, err := r.git.manifestBlobs(c)
	if err != nil {
		return nil, err
	}
	var paths []string
	if len(opt.Paths) == 0 {
		for p := range blobs {
			paths = append(paths, p)
		}
		sort.Strings(paths)
	} else {
		for _, p := range opt.Paths {
			if _, ok := blobs[p]; !ok {
				return nil, fmt.Errorf("%s is %w in %s", p, ErrNotTracked, revName(opt.Rev))
			}
			paths = append(paths, p)
		}
	}
	cache := r.loadStatCache()
	defer func() { _ = cache.Save() }()
	wt := r.workTree()
	defer wt.Close()
	plans, failed, err := r.planCheckout(ctx, wt, opt, paths, blobs, cache)
	if err != nil {
		return nil, err
	}
	expired := &expiryCheck{r: r, c: c}
	expired.explainAll(ctx, failed)
	un, err := r.loadUnfinished()
	if err != nil {
		return nil, err
	}
	res := &CheckoutResult{Commit: c.Hash.String()}
	clock.lap("plan", int64(len(paths)), 0, 0)
	for _, pl := range plans {
		if !pl.layout.upToDate {
			un.add(pl.m.Path, res.Commit, "")
		}
	}
	for _, f := range failed {
		un.add(f.path, res.Commit, f.err.Error())
	}
	if err := r.saveUnfinished(un); err != nil {
		return nil, err
	}
	werr := r.writeCheckout(ctx, wt, opt, plans, cache, res, &failed)
	expired.explainAll(ctx, failed)
	var written, fetched, out int64
	for _, f := range res.Files {
		un.done(f.Path)
		fetched += f.BytesFetched
		switch {
		case f.InPlace:
			written++
			out += f.BytesWritten // only what differed was written
		case f.Status == FileWritten || f.Status == FilePartial:
			written++
			out += f.Size
		}
	}
	clock.lap("write", written, fetched, out)
	res.Stages = clock.stages
	for _, f := range failed {
		un.add(f.path, res.Commit, f.err.Error())
		res.Failed = append(res.Failed, CheckoutFailure{Path: f.path, Error: f.err.Error()})
	}
	if err := r.saveUnfinished(un); err != nil && werr == nil {
		werr = err
	}
	if werr != nil {
		return res, werr
	}
	if len(failed) > 0 {
		return res, &checkoutError{failed: failed, total: len(paths)}
	}
	if len(opt.Paths) == 0 && opt.BBox == nil {
		if err := r.removeGone(blobs, cache); err != nil {
			return res, err
		}
		return res, r.clearPullBase() // every file is as Rev has it now
	}
	return res, nil
}

// checkoutPlan is what Checkout will do with one file.
type checkoutPlan struct {
	m      *manifest.Manifest
	blob   gitdb.Hash // m's manifest blob
	layout manifestLayoutID
	box    geom.BBox    // in the file's CRS, with opt.BBox
	ds     *datasetPlan // for a dataset (m.Format == zarr.Format)
}

// planCheckout reads each file's manifest and checks its target. A file
// that cannot be planned is listed in failed; err is a refusal of the
// whole checkout (a target holding unsaved work, a --bbox that cannot
// apply), returned before anything is written.
func (r *Repo) planCheckout(ctx context.Context, wt *confine.Tree, opt CheckoutOptions, paths []string, blobs map[string]gitdb.Hash, cache *statcache.Cache) (plans []checkoutPlan, failed []fileError, err error) {
	head, err := r.git.Head()
	if err != nil {
		return nil, nil, err
	}
	headBlobs, err := r.git.manifestBlobs(head)
	if err != nil {
		return nil, nil, err
	}
	baseBlobs, err := r.pullBaseBlobs()
	if err != nil {
		return nil, nil, err
	}
	partial := r.loadPartial()
	un, err := r.loadUnfinished()
	if err != nil {
		return nil, nil, err
	}
	plans = make([]checkoutPlan, 0, len(paths))
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		m, _, err := r.git.readManifestBlob(blobs[p], p)
		switch {
		case err == nil && m.Format == zarr.Format:
			err = r.safeDatasetTarget(wt, p)
		case err == nil:
			err = r.safeTarget(wt, p)
		}
		if err != nil {
			failed = append(failed, fileError{p, err})
			continue
		}
		pl := checkoutPlan{m: m, blob: blobs[p]}
		if opt.BBox != nil && m.Format != zarr.Format {
			if pl.box, err = boxsel.Plan(m, *opt.BBox, opt.BBoxCRS); err != nil {
				return nil, nil, err
			}
		}
		known := []gitdb.Hash{}
		if h, ok := headBlobs[p]; ok {
			known = append(known, h)
		}
		if m.Format == zarr.Format {
			pl.layout, pl.ds, err = r.planDataset(ctx, opt, m, append(known, baseBlobs[p]...), cache, partial, un)
		} else {
			pl.layout, err = r.plannedLayout(ctx, opt, m, append(known, baseBlobs[p]...), cache, partial)
		}
		if cerr := ctx.Err(); cerr != nil {
			return nil, nil, cerr
		}
		if errors.Is(err, ErrLocalChanges) {
			return nil, nil, err
		}
		if err != nil {
			failed = append(failed, fileError{p, err})
			continue
		}
		plans = append(plans, pl)
	}
	return plans, failed, nil
}

// plannedLayout looks at the working file of m's path, if any: it is
// up to date, or its layout lets the checkout reuse or patch it, or it
// holds unsaved work (ErrLocalChanges unless opt.Force). Bytes chunkvc has
// stored are never unsaved work: the version the stat cache last saw
// there, or one of known, the manifests of HEAD's version (first) and of
// the versions an unfinished pull went through.
func (r *Repo) plannedLayout(ctx context.Context, opt CheckoutOptions, m *manifest.Manifest, known []gitdb.Hash, cache *statcache.Cache, partial *partialFile) (manifestLayoutID, error) {
	p := m.Path
	ok, err := exists(r.abs(p))
	if err != nil || !ok || (opt.BBox != nil && m.Format != formats.TIFF) {
		// Not there, or only read into the cache: not touched.
		return manifestLayoutID{}, err
	}
	read := func(h gitdb.Hash) (*manifest.Manifest, error) {
		km, _, err := r.git.readManifestBlob(h, p)
		return km, err
	}
	var headM *manifest.Manifest
	if len(known) > 0 {
		if headM, err = read(known[0]); err != nil {
			return manifestLayoutID{}, err
		}
	}
	digest, _, _, err := r.fileDigest(ctx, cache, p, headM)
	if err != nil {
		return manifestLayoutID{}, err
	}
	fi, err := os.Stat(r.abs(p))
	if err != nil {
		return manifestLayoutID{}, err
	}
	if _, wasPartial := partial.Entries[p]; wasPartial {
		// Written by checkout --bbox from stored chunks: nothing of it
		// can be lost, and it may never be committed anyway.
		return manifestLayoutID{}, nil
	}
	if digest == m.Digest {
		return manifestLayoutID{upToDate: true}, nil
	}
	// The version chunkvc last wrote or hashed here, whatever the stat
	// says now: a checkout killed while it patched the file in place is
	// undone by its journal, which leaves those bytes with a new stat.
	if e, _ := cache.Last(p); e.Digest == digest && !e.Layout.IsZero() {
		return manifestLayoutID{id: e.Layout, was: working{stat: statcache.StatOf(fi), digest: e.Digest, layout: e.Layout}}, nil
	}
	// A committed version the stat cache missed: a checkout or pull was
	// killed after writing the file and before saving the cache.
	for i, h := range known {
		km := headM
		if i > 0 {
			if km, err = read(h); err != nil {
				return manifestLayoutID{}, err
			}
		}
		if km.Digest == digest {
			return manifestLayoutID{id: km.Layout, was: working{stat: statcache.StatOf(fi), digest: digest, layout: km.Layout}}, nil
		}
	}
	if !opt.Force {
		return manifestLayoutID{}, fmt.Errorf("%w: %s has changes that are not committed (commit them, or use --force to discard them)", ErrLocalChanges, p)
	}
	return manifestLayoutID{}, nil
}

// writeCheckout writes the planned files, recording each in res.Files; one
// that fails is added to failed and the others are still written. The
// error is the context's, when it ends the checkout early.
func (r *Repo) writeCheckout(ctx context.Context, wt *confine.Tree, opt CheckoutOptions, plans []checkoutPlan, cache *statcache.Cache, res *CheckoutResult, failed *[]fileError) error {
	prog := progress.OrNoop(opt.Progress)
	partial := r.loadPartial()
	for _, pl := range plans {
		if err := ctx.Err(); err != nil {
			return err
		}
		p := pl.m.Path
		wt.RemoveTemps(p)
		if pl.layout.upToDate {
			res.Files = append(res.Files, CheckoutFile{Path: p, Status: FileUpToDate, Size: pl.m.Size})
			continue
		}
		var cf CheckoutFile
		var err error
		if pl.m.Format == zarr.Format {
			cf, err = r.writeDataset(ctx, pl, opt.BBox, res.Commit, cache, partial)
		} else if opt.BBox != nil {
			cf, err = r.checkoutBBox(ctx, wt, pl.m, pl.box, res.Commit, cache)
		} else {
			prog.Start(p, pl.m.Size)
			var st AssembleStats
			var patched bool
			st, patched, err = r.patchInPlace(ctx, pl.m, pl.layout.was, cache, prog)
			if err == nil && !patched {
				st, err = r.writeFile(ctx, wt, pl.m, r.reuseFrom(ctx, p, pl.layout.id), cache, prog)
			}
			prog.Done()
			if err == nil {
				err = partial.set(p, nil)
			}
			cf = CheckoutFile{Path: p, Status: FileWritten, Size: pl.m.Size, AssembleStats: st}
		}
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			*failed = append(*failed, fileError{p, err})
			continue
		}
		res.Files = append(res.Files, cf)
	}
	return nil
}

// checkoutBBox materialises the part of m that meets box (see
// CheckoutOptions.BBox).
func (r *Repo) checkoutBBox(ctx context.Context, wt *confine.Tree, m *manifest.Manifest, box geom.BBox, commit string, cache *statcache.Cache) (CheckoutFile, error) {
	p := m.Path
	if m.Format != formats.TIFF {
		st, err := r.prefetchBBox(ctx, m, box)
		if err != nil {
			return CheckoutFile{}, err
		}
		if ok, _ := exists(r.abs(p)); !ok {
			cache.Put(p, statcache.Entry{Lazy: true}) // not materialised is not deleted
		}
		return CheckoutFile{Path: p, Status: FilePrefetched, FullSize: m.Size, AssembleStats: st}, nil
	}
	n, st, err := r.writePartialTIFF(ctx, wt, m, box, commit)
	if err != nil {
		return CheckoutFile{}, err
	}
	cache.Drop(p)
	return CheckoutFile{Path: p, Status: FilePartial, Size: n, FullSize: m.Size, AssembleStats: st}, nil
}

type manifestLayoutID struct {
	id       hashing.ID
	upToDate bool
	was      working // the working file, when its version is known
}

func revName(rev string) string {
	if rev == "" {
		return "HEAD"
	}
	return rev
}

// writeFile assembles m into a temp file beside its target and renames it
// into place once every byte is verified.
func (r *Repo) writeFile(ctx context.Context, wt *confine.Tree, m *manifest.Manifest, ru *reuse, cache *statcache.Cache, prog progress.Counter) (AssembleStats, error) {
	defer ru.close()
	f, err := wt.Create(m.Path)
	if err != nil {
		return AssembleStats{}, err
	}
	hashed := time.Now().UnixNano()
	fail := func(err error) (AssembleStats, error) {
		f.Abort()
		return AssembleStats{}, err
	}
	st, err := r.assembleFile(ctx, m, f.File, ru, prog)
	if err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	fi1, err := f.Stat()
	if err != nil {
		return fail(err)
	}
	if err := f.Commit(false); err != nil {
		return AssembleStats{}, err
	}
	renamed := time.Now().UnixNano()
	if fi2, err := wt.Lstat(m.Path); err == nil {
		// The bytes are ours and verified. Nobody else could write them
		// before the rename (a temp name only we opened); a write after
		// it moves the mtime if our last write is older than the racy
		// window of the file's own file system by then, which fsync
		// makes likely for a large file. So if the mtime has not moved
		// since our fstat, the entry can be trusted from the rename on,
		// and the next status or checkout does not read the file again.
		// Otherwise it is racily clean: re-read once, then trusted.
		// Where times move after a stat (statcache.TimesMoveAfterStat), an mtime
		// unmoved since our fstat is proof enough at once.
		now, was := statcache.StatOf(fi2), statcache.StatOf(fi1)
		dir := filepath.Dir(r.abs(m.Path))
		w := statcache.FSWindow(dir)
		if now.Mtime == was.Mtime && now.Size == was.Size && now.Ino == was.Ino {
			if now.Mtime+w < renamed {
				hashed = renamed
			} else if statcache.TimesMoveAfterStat(dir) {
				hashed = now.Mtime + w + 1
			}
		}
		cache.Put(m.Path, statcache.Entry{Stat: now, Digest: m.Digest, Layout: m.Layout, Hashed: hashed})
	}
	return st, nil
}

type progressWriter struct {
	f    *os.File
	prog progress.Counter
}

func (w progressWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.prog.Add(int64(n))
	return n, err
}
