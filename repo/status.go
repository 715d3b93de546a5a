package repo

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/chunkvc/chunkvc/diff"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/statcache"
	"golang.org/x/sync/errgroup"
)

// FileStatus is what a command found or did to one file; --json writes
// it as it is spelled here.
type FileStatus string

// File statuses. Commit reports added, modified, deleted and unchanged;
// log added, modified and deleted; status added, modified, deleted,
// partial, refused and not-checked-out; checkout written, up-to-date,
// partial and prefetched.
const (
	FileAdded     FileStatus = "added"
	FileModified  FileStatus = "modified"
	FileDeleted   FileStatus = "deleted"
	FileUnchanged FileStatus = "unchanged"
	// FilePartial is a file written by checkout --bbox: only the tiles
	// that meet the box, the others sparse.
	FilePartial FileStatus = "partial"
	// FileRefused is a file whose name a manifest cannot hold.
	FileRefused FileStatus = "refused"
	// FileNotCheckedOut is committed, missing, and listed by a checkout
	// that did not finish writing it (.git/chunkvc/checkout-unfinished),
	// so not deleted.
	FileNotCheckedOut FileStatus = "not-checked-out"
	// FileConflict is a data file a merge left conflicted (its manifest
	// holds the merge driver's conflict lines).
	FileConflict FileStatus = "conflict"
	FileWritten  FileStatus = "written"
	FileUpToDate FileStatus = "up-to-date"
	// FilePrefetched is a Parquet or FlatGeobuf file whose chunks that
	// meet a checkout --bbox were read into the cache; nothing written.
	FilePrefetched FileStatus = "prefetched"
)

// StatusEntry is one tracked file that differs from HEAD.
type StatusEntry struct {
	Path   string     `json:"path"`
	Status FileStatus `json:"status"` // added, modified, deleted, partial, refused, not-checked-out
	Size   int64      `json:"size"`
	Reason string     `json:"reason,omitempty"` // why a refused file cannot be committed
	// Conflicts, of a conflicted file, are the merge driver's lines
	// ("conflict z0/r0/c0 [bbox]: reason").
	Conflicts []string `json:"conflicts,omitempty"`
	// Arrays, of a modified dataset, says what changed in each array.
	Arrays []diff.ZarrArray `json:"arrays,omitempty"`
}

// Status compares the tracked files in the work tree with HEAD's
// manifests. Files whose stat matches the stat cache are not read. A file
// written by checkout --bbox is "partial" (whatever it holds now); one
// whose name a manifest cannot hold, which commit leaves out, "refused";
// one a checkout did not write is "not-checked-out" while it is missing.
func (r *Repo) Status(ctx context.Context) ([]StatusEntry, error) {
	if err := r.settlePatch(); err != nil {
		return nil, err
	}
	j, files, err := r.startStatus()
	if err != nil {
		return nil, err
	}
	files, refused := storable(files)
	partial := r.loadPartial()
	un, err := r.loadUnfinished()
	if err != nil {
		return nil, err
	}
	for _, f := range refused {
		e := StatusEntry{Path: f.Path, Status: FileRefused, Reason: f.Reason}
		if fi, err := os.Stat(r.abs(f.Path)); err == nil {
			e.Size = fi.Size()
		}
		j.out = append(j.out, e)
	}
	stats := r.statFiles(files, false)
	for i, p := range files {
		if err := j.checkFile(ctx, p, stats[i], partial); err != nil {
			return nil, err
		}
	}
	gone, notOut := goneFrom(files, j.prev, j.cache, un)
	for _, p := range gone {
		j.out = append(j.out, StatusEntry{Path: p, Status: FileDeleted})
	}
	for _, p := range notOut {
		j.out = append(j.out, StatusEntry{Path: p, Status: FileNotCheckedOut})
	}
	if err := j.addConflicts(ctx); err != nil {
		return nil, err
	}
	sort.Slice(j.out, func(a, b int) bool { return j.out[a].Path < j.out[b].Path })
	if j.dirty {
		_ = j.cache.Save()
	}
	return j.out, nil
}

// statusJob is one Status: startStatus reads what it compares, checkFile
// classifies each listed file.
type statusJob struct {
	r     *Repo
	cache *statcache.Cache
	dirty bool         // cache changed
	prev  manifestList // HEAD's manifests by path
	at    listCursor   // prev, walked beside the sorted work-tree files
	out   []StatusEntry
}

// startStatus returns the job and the work tree's tracked files, reading
// them, the stat cache and HEAD's manifest tree at once (Git objects are
// read by this goroutine only).
func (r *Repo) startStatus() (*statusJob, []string, error) {
	head, err := r.git.Head()
	if err != nil {
		return nil, nil, err
	}
	j := &statusJob{r: r}
	var files []string
	var g errgroup.Group
	g.Go(func() (err error) {
		files, err = r.trackedFiles()
		return err
	})
	g.Go(func() error {
		// Looked up file by file, saved only when a file was read: not
		// decoded into a map of every path.
		j.cache = statcache.LoadIndexed(r.gitTree(), r.Root)
		return nil
	})
	j.prev, _, err = r.headList(head)
	if werr := g.Wait(); err == nil {
		err = werr
	}
	if err != nil {
		return nil, nil, err
	}
	j.at = listCursor{l: j.prev}
	return j, files, nil
}

// checkFile adds tracked file p, stat st, to the result unless it holds
// the bytes of HEAD's manifest: read only when the stat cache cannot say.
func (j *statusJob) checkFile(ctx context.Context, p string, st fileInfo, partial *partialFile) error {
	h, committed := j.at.find(p)
	if _, ok := partial.Entries[p]; !ok && j.r.Config.IsDataset(p) {
		return j.checkDataset(ctx, p, h, committed, st)
	}
	if _, ok := partial.Entries[p]; ok {
		if st.err != nil {
			return st.err
		}
		j.out = append(j.out, StatusEntry{Path: p, Status: FilePartial, Size: st.fi.Size()})
		return nil
	}
	if !committed {
		if st.err != nil {
			return st.err
		}
		j.out = append(j.out, StatusEntry{Path: p, Status: FileAdded, Size: st.fi.Size()})
		return nil
	}
	if st.err == nil {
		if j.cache.Unchanged(p, statcache.StatOf(st.fi), h) {
			return nil // same stat as when HEAD's manifest was made: unchanged, nothing read
		}
	}
	old, _, err := j.r.git.readManifestBlob(h, p)
	if err != nil {
		return err
	}
	digest, size, fresh, err := j.r.fileDigest(ctx, j.cache, p, old)
	if err != nil {
		return err
	}
	if digest == old.Digest {
		// Remember which manifest these bytes match, for next time.
		if fi, err := os.Stat(j.r.abs(p)); err == nil {
			if e, ok := j.cache.Lookup(p, statcache.StatOf(fi)); ok && e.Manifest != h.String() {
				e.Manifest = h.String()
				j.cache.Put(p, e)
				fresh = true
			}
		}
	}
	j.dirty = j.dirty || fresh
	if digest != old.Digest {
		j.out = append(j.out, StatusEntry{Path: p, Status: FileModified, Size: size})
	}
	return nil
}

// fileDigest returns the BLAKE3 digest of work-tree file p, from the stat
// cache when it can be trusted, else by reading the file (and caching the
// answer; when the bytes equal known's, its layout is recorded too).
// fresh reports that the cache changed.
func (r *Repo) fileDigest(ctx context.Context, cache *statcache.Cache, p string, known *manifest.Manifest) (digest hashing.ID, size int64, fresh bool, err error) {
	f, err := os.Open(r.abs(p))
	if err != nil {
		return digest, 0, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return digest, 0, false, err
	}
	st := statcache.StatOf(fi)
	if e, ok := cache.Lookup(p, st); ok {
		return e.Digest, st.Size, false, nil
	}
	hashed := time.Now().UnixNano()
	digest, err = hashing.SumReaderAt(ctx, f, st.Size)
	if err != nil {
		return digest, 0, false, err
	}
	fi2, err := f.Stat()
	if err != nil {
		return digest, 0, false, err
	}
	if statcache.StatOf(fi2) != st {
		return digest, st.Size, false, nil // changing right now: do not cache
	}
	e := statcache.Entry{Stat: st, Digest: digest, Hashed: hashed}
	if prev, ok := cache.LayoutOf(p, st); ok && prev.Digest == digest {
		e.Layout = prev.Layout // same bytes as when we last recorded them
	}
	if known != nil && known.Digest == digest {
		e.Layout = known.Layout
	}
	cache.Put(p, e)
	return digest, st.Size, true, nil
}

func exists(name string) (bool, error) {
	_, err := os.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// goneFrom returns, sorted, the files of prev (HEAD's manifests by path)
// that listed (the work tree's tracked files, each once, sorted) lacks:
// gone, but for those deliberately not checked out (lazy), and notOut,
// those a checkout did not write (un). Most often none is missing: no set
// of 20,000 paths is made to find that out.
func goneFrom(listed []string, prev manifestList, cache *statcache.Cache, un *unfinished) (gone, notOut []string) {
	committed := 0
	at := listCursor{l: prev}
	for _, p := range listed {
		if _, ok := at.find(p); ok {
			committed++
		}
	}
	if committed == len(prev) {
		return nil, nil
	}
	present := make(map[string]bool, len(listed))
	for _, p := range listed {
		present[p] = true
	}
	for _, e := range prev {
		switch p := e.Path; {
		case present[p] || cache.IsLazy(p):
		case un.has(p):
			notOut = append(notOut, p)
		default:
			gone = append(gone, p)
		}
	}
	sort.Strings(gone)
	sort.Strings(notOut)
	return gone, notOut
}

// addConflicts lists, while a merge is stopped (.git/MERGE_HEAD), the data
// files it left conflicted, in place of what else status says of them;
// without a merge under way it costs one lstat.
func (j *statusJob) addConflicts(ctx context.Context) error {
	gt := j.r.gitTree()
	_, err := gt.Lstat("MERGE_HEAD")
	gt.Close()
	if err != nil {
		return nil // no merge under way
	}
	out, err := j.r.git.CLI().Run(ctx, "diff", "--name-only", "--diff-filter=U", "--", ManifestDir)
	if err != nil {
		return err
	}
	conflicted := map[string]ConflictedPath{}
	for p := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		if p != "" {
			c := j.r.conflictOf(p)
			conflicted[c.Path] = c
		}
	}
	kept := j.out[:0]
	for _, e := range j.out {
		if _, ok := conflicted[e.Path]; !ok {
			kept = append(kept, e)
		}
	}
	j.out = kept
	for p, c := range conflicted {
		j.out = append(j.out, StatusEntry{Path: p, Status: FileConflict, Conflicts: c.Lines})
	}
	return nil
}
