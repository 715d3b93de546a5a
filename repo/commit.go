package repo

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"sort"
	"sync/atomic"

	"github.com/chunkvc/chunkvc/diff"
	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/internal/progress"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
	"golang.org/x/sync/errgroup"
)

// CommitOptions configures Commit.
type CommitOptions struct {
	Message string
	// Paths limits the commit to these tracked files (slash paths from the
	// root); empty means every tracked file.
	Paths   []string
	Verify  Verify
	Workers int // hashing workers; 0 = GOMAXPROCS
	// Offline writes new chunks to the embedded store (.git/chunkvc/store)
	// instead of the configured one; push uploads them later.
	Offline  bool
	Progress progress.Counter
}

// FileResult reports one file of a commit.
type FileResult struct {
	Path      string     `json:"path"`
	Status    FileStatus `json:"status"` // added, modified, deleted, unchanged
	Format    string     `json:"format,omitempty"`
	Fallback  string     `json:"fallback,omitempty"`
	Size      int64      `json:"size"`
	Chunks    int        `json:"chunks"`
	NewChunks int        `json:"new_chunks"`
	NewBytes  int64      `json:"new_bytes"`
	Changed   int        `json:"changed_keys"`
	Warnings  []string   `json:"warnings,omitempty"`
}

// CommitResult reports a commit.
type CommitResult struct {
	Commit         string       `json:"commit"`
	Branch         string       `json:"branch"`
	Files          []FileResult `json:"files"`
	ChunksUploaded int64        `json:"chunks_uploaded"`
	BytesUploaded  int64        `json:"bytes_uploaded"`
	// Refused are tracked files left out: a manifest cannot name them.
	Refused []Refused `json:"refused,omitempty"`
	// NotCheckedOut lists committed files that are missing because a
	// checkout did not write them (.git/chunkvc/checkout-unfinished):
	// they are left as HEAD has them, not recorded as deleted.
	NotCheckedOut []string `json:"not_checked_out,omitempty"`
}

// Commit chunks the tracked files, stores new chunks, verifies them, and
// only then commits the manifests (plus whatever is staged) to Git.
func (r *Repo) Commit(ctx context.Context, opt CommitOptions) (*CommitResult, error) {
	unlock, err := r.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	head, err := r.git.Head()
	if err != nil {
		return nil, err
	}
	// Three independent reads, as in Status: the stat cache, the work
	// tree's listing (when committing all of it) and HEAD's manifest tree
	// (Git objects, read here by this goroutine only).
	var cache *statCache
	var listed []string
	var reads errgroup.Group
	reads.Go(func() error {
		cache = r.loadStatCache()
		return nil
	})
	if len(opt.Paths) == 0 {
		reads.Go(func() (err error) {
			listed, err = r.trackedFiles()
			return err
		})
	}
	prev, err := r.git.manifestBlobs(head)
	if werr := reads.Wait(); err == nil {
		err = werr
	}
	if err != nil {
		return nil, err
	}
	listed, refused := storable(listed)
	un, err := r.loadUnfinished()
	if err != nil {
		return nil, err
	}
	paths, deleted, notOut, err := r.commitScope(opt.Paths, listed, prev, cache, un)
	if err != nil {
		return nil, err
	}
	partial := r.loadPartial() // once, not per path: 20,000 paths, 20,000 reads
	for _, p := range paths {
		if r.isPartial(partial, p) {
			return nil, PartialError(p)
		}
	}
	target := r.Store
	if opt.Offline {
		target = r.read.local
	}
	up, err := newUpload(ctx, target, opt.Verify, opt.Progress)
	if err != nil {
		return nil, err
	}
	defer up.abort()
	res := &CommitResult{Refused: refused, NotCheckedOut: notOut}
	writes := map[string]gitdb.Blob{} // manifest path → its blob
	worktree := map[string]*chunked{} // same, for the work tree after the commit
	type done struct {
		p string
		e cacheEntry
	}
	var cached []done
	current := map[string]*manifest.Manifest{} // every considered file's manifest, for sibling checks

	// Files whose stat or digest shows them unchanged are settled first;
	// the others are chunked, several at once (a tree of many small files
	// would otherwise leave cores idle between files), then reported in
	// path order.
	type job struct {
		p        string
		base     version    // the version chunkvc last wrote or hashed at p
		prev     gitdb.Hash // HEAD's manifest blob; zero if none
		old      *manifest.Manifest
		oldBytes []byte
		ch       *chunked
		cached   int // its entry in cached, whose Manifest is set once its blob is named
	}
	var jobs []*job
	defer func() { // on every path: nothing may go on writing after Commit
		for _, j := range jobs {
			if j.ch != nil {
				_, _ = j.ch.put.Wait(), j.ch.named.Wait()
			}
		}
	}()
	var total int64
	stats := r.statFiles(paths, true)
	for i, p := range paths {
		var old *manifest.Manifest
		var oldBytes []byte
		fi, err := stats[i].fi, stats[i].err
		if err != nil {
			return nil, err
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("%s is not a regular file (symbolic links are not followed)", p)
		}
		h, inPrev := prev[p]
		e, hit := cache.lookup(p, statOf(fi))
		if hit && inPrev && e.describedBy(h) {
			// Same stat as when HEAD's manifest was made: not even read
			// (so no format or chunk count to report).
			res.Files = append(res.Files, FileResult{Path: p, Status: FileUnchanged, Size: fi.Size()})
			continue
		}
		if hit && inPrev {
			// Same stat as a file hashed before, but HEAD's manifest is
			// another: the digest decides.
			if old, oldBytes, err = r.git.readManifestBlob(h, p); err != nil {
				return nil, err
			}
		}
		if hit && old != nil && e.Digest == old.Digest {
			current[p] = old
			e.Manifest = h.String()
			cached = append(cached, done{p, e})
			res.Files = append(res.Files, FileResult{Path: p, Status: FileUnchanged, Format: old.Format, Fallback: old.Fallback, Size: old.Size, Chunks: len(old.Chunks)})
			continue
		}
		j := &job{p: p, old: old, oldBytes: oldBytes}
		if e, ok := cache.last(p); ok {
			j.base = version{e.Digest, e.Size}
		}
		if inPrev && old == nil {
			j.prev = h
		}
		jobs = append(jobs, j)
		total += fi.Size()
	}
	if len(jobs) > 0 {
		label := jobs[0].p
		if len(jobs) > 1 {
			label = fmt.Sprintf("%d files", len(jobs))
		}
		up.progress.Start(label, total)
		up.packManifests = len(jobs) >= packBlobsFrom
		// A few long-lived workers rather than a goroutine per file: each
		// new goroutine grows its stack again through the hashing code
		// (8% of a 20,000-file commit).
		g, gctx := errgroup.WithContext(ctx)
		var next atomic.Int64
		for range min(fileWorkers, len(jobs)) {
			g.Go(func() error {
				for {
					i := int(next.Add(1) - 1)
					if i >= len(jobs) {
						return nil
					}
					if err := gctx.Err(); err != nil {
						return err // a file left unchunked must fail the commit
					}
					j := jobs[i]
					load := func() (*manifest.Manifest, error) {
						if !j.prev.IsZero() {
							var err error
							j.old, j.oldBytes, err = r.git.readManifestBlob(j.prev, j.p)
							return j.old, err
						}
						return j.old, nil
					}
					var err error
					if j.ch, err = r.chunkFile(gctx, j.p, load, j.base, up, opt.Workers); err != nil {
						return err
					}
				}
			})
		}
		err := g.Wait()
		up.progress.Done()
		if err != nil {
			return nil, err
		}
	}
	for _, j := range jobs { // in path order
		p, old, oldBytes, ch := j.p, j.old, j.oldBytes, j.ch
		newChunks, newBytes := up.credit(ch.m)
		current[p] = ch.m
		j.cached = len(cached)
		cached = append(cached, done{p, cacheEntry{fileStat: ch.stat, Digest: ch.m.Digest, Layout: ch.m.Layout, Hashed: ch.hashed}})
		fr := FileResult{Path: p, Format: ch.m.Format, Fallback: ch.m.Fallback, Size: ch.m.Size, Chunks: len(ch.m.Chunks),
			NewChunks: newChunks, NewBytes: newBytes}
		switch {
		case old == nil:
			fr.Status = FileAdded
			fr.Changed = len(ch.m.Chunks)
		case ch.sameText(oldBytes):
			fr.Status = FileUnchanged
		default:
			fr.Status = FileModified
			d := manifest.Diff(old, ch.m)
			fr.Changed = d.Added + d.Removed + d.Changed
			fr.Warnings = diff.Warnings(old, ch.m, d)
		}
		if fr.Status != FileUnchanged {
			worktree[p] = ch
		}
		res.Files = append(res.Files, fr)
	}
	if err := r.siblingWarnings(res.Files, current, prev); err != nil {
		return nil, err
	}
	var remove []string
	for _, p := range deleted {
		remove = append(remove, manifestPath(p))
		remove = append(remove, r.git.shardFiles(p, prev[p])...)
		res.Files = append(res.Files, FileResult{Path: p, Status: FileDeleted})
	}
	sort.Slice(res.Files, func(i, j int) bool { return res.Files[i].Path < res.Files[j].Path })
	res.ChunksUploaded, res.BytesUploaded = up.chunks.Load(), up.bytes.Load()
	// Many manifests go into Git in one pack, while the store's batch is
	// made durable.
	var packed errgroup.Group
	if up.packManifests {
		packed.Go(func() error {
			var blobs []gitdb.PackedBlob
			for _, j := range jobs {
				if worktree[j.p] == nil {
					continue // unchanged
				}
				if err := j.ch.named.Wait(); err != nil {
					return err
				}
				blobs = append(blobs, j.ch.packedBlobs()...)
			}
			if err := r.git.PutBlobsPacked(blobs); err != nil {
				return fmt.Errorf("write the manifests into git: %w", err)
			}
			return nil
		})
	}
	if err := up.finish(ctx); err != nil {
		_ = packed.Wait()
		return nil, err
	}
	// The manifests' Git objects were written meanwhile (a large one is
	// deflated while the store's batch is made durable).
	for _, j := range jobs {
		if err := errors.Join(j.ch.named.Wait(), j.ch.put.Wait()); err != nil {
			_ = packed.Wait()
			return nil, err
		}
		cached[j.cached].e.Manifest = j.ch.blob.Hash.String()
	}
	if err := packed.Wait(); err != nil {
		return nil, err
	}
	for _, ch := range worktree {
		maps.Copy(writes, ch.gitFiles())
	}
	remove = append(remove, r.git.staleShards(prev, worktree, writes)...)
	wt := r.workTree()
	defer wt.close()
	copies, text, err := manifestCopies(wt, worktree, remove)
	if err != nil {
		return nil, err
	}

	if err := r.checkManifestTree(slices.Sorted(maps.Keys(writes)), remove); err != nil {
		return nil, err
	}
	// Every chunk is stored and verified: now, and only now, Git.
	h, err := r.git.commit(opt.Message, writes, remove, r.git.manifestsOf(prev, opt.Paths, paths, deleted))
	keep := func() { // the stats of what was read, now committed or as HEAD has it
		for _, p := range deleted {
			cache.drop(p)
		}
		for _, d := range cached {
			cache.put(d.p, d.e)
		}
	}
	if errors.Is(err, ErrNothingToCommit) {
		// Every file matches HEAD: the stats seen of those that were
		// read (touched, not changed) hold, and spare the next commit
		// reading them again.
		keep()
		_ = cache.save()
		if len(refused) > 0 {
			err = fmt.Errorf("%w; not committed, as a manifest cannot name them: %s", err, refusedNames(refused))
		}
		if len(notOut) > 0 {
			err = fmt.Errorf("%w; %s", err, NotCheckedOutNote(notOut))
		}
	}
	if err != nil {
		return res, err
	}
	res.Commit, res.Branch = h.String(), r.git.Branch()
	registered := r.registerAsync(ctx, target, "commit "+res.Commit+" made")

	// The stat cache, which describes the data files as committed, is
	// saved while their manifests are written to the work tree.
	keep()
	saved := make(chan struct{})
	go func() {
		defer close(saved)
		_ = cache.save()
	}()
	defer func() { <-saved }()
	// Deleted files' manifests go first: a new one may take the place of
	// their folder, or a folder of new ones the place of one of them.
	if err := removeManifests(wt, remove); err != nil {
		return res, errors.Join(fmt.Errorf("commit %s made, but removing the manifests of deleted files from the work tree failed: %w", h, err), registered())
	}
	// Serially: creating files in parallel costs this file system several
	// times the CPU (measured: 20,000 manifests, 8 writers, 6 s of system
	// time instead of 1.5 s) for no gain in time.
	if err := writeManifestCopies(wt, h, copies, text); err != nil {
		return res, errors.Join(err, registered())
	}
	return res, registered()
}

// manifestCopies returns, sorted (so that each directory is opened once),
// the paths of the manifest files (roots and shards) that commit writes to
// the work tree, with their text, once it has checked that they and those
// of remove can go there: no link on the way out of the tree. It is
// checked before the commit is made, not after.
func manifestCopies(wt *tree, worktree map[string]*chunked, remove []string) ([]string, map[string][]byte, error) {
	text := map[string][]byte{}
	for _, ch := range worktree {
		maps.Copy(text, ch.files())
	}
	copies := slices.Sorted(maps.Keys(text))
	for _, p := range slices.Concat(copies, remove) {
		// Only the folders: a folder in a manifest's place is
		// checkManifestTree's to judge (it may be going away).
		if err := wt.checkParents(p); err != nil {
			return nil, nil, err
		}
	}
	return copies, text, nil
}

// writeManifestCopies writes the manifests of commit h to the work tree
// (those of deleted files are gone already). They are copies of what Git holds
// durably, so not synced, as Git writes its own work tree: a commit of
// 5,000 files spent 0.4 s syncing them.
func writeManifestCopies(wt *tree, h gitdb.Hash, copies []string, text map[string][]byte) error {
	for _, p := range copies {
		if err := wt.writeFile(p, text[p], false); err != nil {
			return fmt.Errorf("commit %s made, but writing its manifest to the work tree failed: %w", h, err)
		}
	}
	return nil
}

// fileWorkers is how many files a commit chunks at once. Each file's
// hashing already uses every core; a second file in flight fills the gaps
// between files (opening, parsing, manifests), which dominate when files
// are small.
const fileWorkers = 2

// commitScope returns the tracked files to consider, the previously
// committed ones that are gone from the work tree, and those missing
// because a checkout did not write them (un; not deleted): of args, or
// with no args of listed, the tracked files of the whole work tree.
func (r *Repo) commitScope(args, listed []string, prev map[string]gitdb.Hash, cache *statCache, un *unfinished) (paths, deleted, notOut []string, err error) {
	if len(args) == 0 {
		deleted, notOut = goneFrom(listed, prev, cache, un)
		return listed, deleted, notOut, nil
	}
	present := map[string]bool{}
	for _, p := range args {
		if err := manifest.CheckPath(p); err != nil {
			return nil, nil, nil, err
		}
		_, inPrev := prev[p]
		if _, err := os.Lstat(r.abs(p)); errors.Is(err, fs.ErrNotExist) {
			switch {
			case inPrev && cache.isLazy(p):
				return nil, nil, nil, fmt.Errorf("%s is not checked out (lazy clone): chunkvc checkout -- %s first", p, p)
			case inPrev && un.has(p):
				return nil, nil, nil, fmt.Errorf("%s is not checked out (a checkout did not finish), so it cannot be committed as deleted: chunkvc checkout -- %s first", p, p)
			case inPrev:
				deleted = append(deleted, p)
				continue
			}
			return nil, nil, nil, fmt.Errorf("%s: no such file, and not in HEAD", p)
		}
		if !r.Config.IsTracked(p) && !inPrev {
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
func (r *Repo) siblingWarnings(files []FileResult, current map[string]*manifest.Manifest, prev map[string]gitdb.Hash) error {
	byDir := map[string][]string{}
	for _, f := range files {
		byDir[path.Dir(f.Path)] = append(byDir[path.Dir(f.Path)], f.Path)
	}
	load := func(q string) (*manifest.Manifest, error) {
		if m, ok := current[q]; ok || prev[q].IsZero() {
			return m, nil
		}
		m, _, err := r.git.readManifestBlob(prev[q], q)
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
					f.Warnings = append(f.Warnings, fmt.Sprintf("%s %s differs from sibling %s (%s): one dataset, two incompatible layouts?", field, a, q, b))
					break
				}
			}
		}
	}
	return nil
}
