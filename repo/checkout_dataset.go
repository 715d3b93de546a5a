package repo

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/chunkvc/chunkvc/geom"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/confine"
	"github.com/chunkvc/chunkvc/repo/internal/dataset"
	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
	"github.com/chunkvc/chunkvc/repo/internal/readpath"
	"github.com/chunkvc/chunkvc/repo/internal/statcache"
)

// Checkout of a dataset (docs/DATASETS.md): the store's directory is made
// to hold the target version exactly, every member written through
// dataset.Update (a temp file beside it, renamed once whole and verified),
// and only the members that differ from what the directory holds. What it
// holds is known the way status knows it: the stat cache's entry for the
// dataset's stamp, else the dataset digest of its members.

// datasetPlan is what a checkout will do with one dataset.
type datasetPlan struct {
	// old is the committed version the directory holds, nil when it is
	// missing or not known (forced, or left half-written by a checkout
	// that was killed): then every member present is read and compared.
	old *manifest.Manifest
}

// safeDatasetTarget is safeTarget for a dataset: the directory p may be
// there (a real one, not a link), and the way to it leaves no link.
func (r *Repo) safeDatasetTarget(t *confine.Tree, p string) error {
	if err := manifest.CheckPath(p); err != nil {
		return err
	}
	if isInternal(p) {
		return fmt.Errorf("path %q is inside .git or .chunkvc", p)
	}
	if err := t.CheckParents(p); err != nil {
		return err
	}
	if fi, err := t.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return confine.Refuse("write", p, "is a symbolic link")
	}
	return nil
}

// planDataset is plannedLayout for dataset m: up to date, or holding a
// committed version (HEAD's first among known), or not there, or holding
// work that is not committed (ErrLocalChanges unless opt.Force). A store
// written by checkout --bbox, or by a checkout that did not finish, holds
// only stored bytes and is rewritten as needed.
func (r *Repo) planDataset(ctx context.Context, opt CheckoutOptions, m *manifest.Manifest, known []gitdb.Hash, cache *statcache.Cache, partial *partialFile, un *unfinished) (manifestLayoutID, *datasetPlan, error) {
	p := m.Path
	fi, err := os.Lstat(r.abs(p))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return manifestLayoutID{}, &datasetPlan{}, nil
	case err != nil:
		return manifestLayoutID{}, nil, err
	case !fi.IsDir():
		if !opt.Force {
			return manifestLayoutID{}, nil, fmt.Errorf("%w: dataset %s is not a directory in the work tree (move it, or use --force to replace it)", ErrLocalChanges, p)
		}
		return manifestLayoutID{}, nil, fmt.Errorf("dataset %s is not a directory in the work tree (symbolic links are not followed); move it", p)
	}
	_, wasPartial := partial.Entries[p]
	if wasPartial || un.has(p) {
		return manifestLayoutID{}, &datasetPlan{}, nil
	}
	digest, err := r.datasetDigest(ctx, p, known, cache)
	if err != nil {
		return manifestLayoutID{}, nil, err
	}
	if digest == m.Digest && opt.BBox == nil {
		return manifestLayoutID{upToDate: true}, nil, nil
	}
	for _, h := range known {
		km, _, err := r.git.readManifestBlob(h, p)
		if err != nil {
			return manifestLayoutID{}, nil, err
		}
		if km.Digest == digest {
			return manifestLayoutID{}, &datasetPlan{old: km}, nil
		}
	}
	if digest == m.Digest {
		return manifestLayoutID{}, &datasetPlan{old: m}, nil
	}
	// The version chunkvc last wrote or hashed here for a commit (a
	// checkout of another revision, HEAD not moved): committed, so
	// nothing is lost. Its manifest is read when this process noted its
	// shards; else the members are compared as they are written.
	if e, ok := cache.Last(p); ok && e.Digest == digest && e.Manifest != "" {
		if h, err := gitdb.ParseHash(e.Manifest); err == nil {
			if km, _, err := r.git.readManifestBlob(h, p); err == nil && km.Digest == digest {
				return manifestLayoutID{}, &datasetPlan{old: km}, nil
			}
			return manifestLayoutID{}, &datasetPlan{}, nil
		}
	}
	if !opt.Force {
		return manifestLayoutID{}, nil, fmt.Errorf("%w: dataset %s has changes that are not committed (commit them, or use --force to discard them)", ErrLocalChanges, p)
	}
	return manifestLayoutID{}, &datasetPlan{}, nil
}

// datasetDigest is the dataset digest of the members of dataset p: HEAD's
// (known[0]) when the stat cache says the stamp is unchanged since it held
// that version, the cached digest when the stamp matches an entry, else
// hashed (nothing stored) and remembered.
func (r *Repo) datasetDigest(ctx context.Context, p string, known []gitdb.Hash, cache *statcache.Cache) (hashing.ID, error) {
	st, err := r.datasetStat(p)
	if err != nil {
		return hashing.ID{}, err
	}
	if len(known) > 0 && cache.Unchanged(p, st, known[0]) {
		km, _, err := r.git.readManifestBlob(known[0], p)
		if err != nil {
			return hashing.ID{}, err
		}
		return km.Digest, nil
	}
	if e, ok := cache.Lookup(p, st); ok {
		return e.Digest, nil
	}
	ch, err := r.chunkDataset(ctx, p, nil, nil, 0, nil)
	if err != nil {
		return hashing.ID{}, err
	}
	cache.Put(p, statcache.Entry{Stat: ch.stat, Digest: ch.m.Digest, Layout: ch.m.Layout, Hashed: ch.hashed})
	return ch.m.Digest, nil
}

// writeDataset makes dataset m's directory hold m's version (with box,
// only the chunks whose footprint meets it, and the store is recorded as
// partial), then records its stamp in the stat cache so that status need
// not read it again.
func (r *Repo) writeDataset(ctx context.Context, pl checkoutPlan, box *geom.BBox, commit string, cache *statcache.Cache, partial *partialFile) (CheckoutFile, error) {
	m := pl.m
	p := m.Path
	cur, err := r.datasetVersion(ctx, m)
	if err != nil {
		return CheckoutFile{}, err
	}
	var old dataset.Version
	if pl.ds != nil && pl.ds.old != nil {
		if old, err = r.datasetVersion(ctx, pl.ds.old); err != nil {
			return CheckoutFile{}, err
		}
	}
	cf := CheckoutFile{Path: p, Status: FileWritten, Size: m.Size}
	if box != nil {
		var n int64
		cur.Chunks, n = chunksInBox(m.Chunks, *box)
		cf = CheckoutFile{Path: p, Status: FilePartial, Size: n, FullSize: m.Size}
	}
	fetch := func(id hashing.ID) ([]byte, error) {
		b, src, err := r.read.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		if src == readpath.FromRemote {
			cf.ChunksFetched++
			cf.BytesFetched += int64(len(b))
		} else {
			cf.ChunksLocal++
		}
		return b, nil
	}
	// Anything the directory holds that neither version has was there
	// only if the plan found no unsaved work (or --force), so it goes.
	if _, err := dataset.Update(r.abs(p), old, cur, fetch, true); err != nil {
		return CheckoutFile{}, fmt.Errorf("dataset %s: %w", p, err)
	}
	if box != nil {
		cache.Drop(p)
		return cf, partial.set(p, &partialEntry{Commit: commit, Digest: m.Digest, Layout: m.Layout, BBox: *box, Size: cf.Size})
	}
	if err := r.stampDataset(p, m, pl.blob, cache); err != nil {
		return CheckoutFile{}, err
	}
	return cf, partial.set(p, nil)
}

// datasetVersion loads what dataset.Update needs of m: its layout blob
// (read like a file's) and its chunk lines.
func (r *Repo) datasetVersion(ctx context.Context, m *manifest.Manifest) (dataset.Version, error) {
	b, _, err := r.read.Get(ctx, m.Layout)
	if err != nil {
		return dataset.Version{}, fmt.Errorf("dataset %s: layout %s: %w", m.Path, m.Layout, err)
	}
	if hashing.Sum(b) != m.Layout || (m.LayoutSize != 0 && int64(len(b)) != m.LayoutSize) {
		return dataset.Version{}, fmt.Errorf("dataset %s: layout %s: %w", m.Path, m.Layout, ErrIntegrity)
	}
	return dataset.Version{Layout: b, Chunks: m.Chunks}, nil
}

// stampDataset records in the stat cache that dataset p, just written,
// holds m (manifest blob h). As for a file written by checkout, the entry
// is trusted at once where times move after a stat: a later write to any
// member would move the stamp's newest time past it.
func (r *Repo) stampDataset(p string, m *manifest.Manifest, h gitdb.Hash, cache *statcache.Cache) error {
	st, err := r.datasetStat(p)
	if err != nil {
		return err
	}
	hashed := time.Now().UnixNano()
	dir := r.abs(p)
	if w := statcache.FSWindow(dir); st.Mtime+w >= hashed && statcache.TimesMoveAfterStat(dir) {
		hashed = st.Mtime + w + 1
	}
	e := statcache.Entry{Stat: st, Digest: m.Digest, Layout: m.Layout, Hashed: hashed}
	if !h.IsZero() {
		e.Manifest = h.String()
	}
	cache.Put(p, e)
	return nil
}

// chunksInBox keeps the chunk lines whose footprint meets box, and every
// line without one (metadata, pieces of listed members); when no chunk
// has a footprint, all of them. n is the bytes they hold.
func chunksInBox(chunks []manifest.Chunk, box geom.BBox) (kept []manifest.Chunk, n int64) {
	for _, c := range chunks {
		if c.BBox == nil || c.BBox.Intersects(box) {
			kept = append(kept, c)
			n += c.Size
		}
	}
	return kept, n
}

// removeGone removes the datasets a full checkout's version (blobs) does
// not have: those HEAD had, an unfinished pull went through, or the
// configuration lists.
func (r *Repo) removeGone(blobs map[string]gitdb.Hash, cache *statcache.Cache) error {
	cands, err := r.pullBaseBlobs()
	if err != nil {
		return err
	}
	if cands == nil {
		cands = map[string][]gitdb.Hash{}
	}
	head, err := r.git.Head()
	if err != nil {
		return err
	}
	headBlobs, err := r.git.manifestBlobs(head)
	if err != nil {
		return err
	}
	for p, h := range headBlobs {
		cands[p] = append(cands[p], h)
	}
	for _, p := range r.Config.Datasets {
		if _, ok := cands[p]; !ok {
			cands[p] = nil
		}
	}
	return r.removeGoneDatasets(cands, blobs, cache)
}

// removeGoneDatasets removes the datasets among cands (path → manifests
// of committed versions it had) that the checkout's version does not have
// (blobs) and that the work tree still holds as one of those versions, or
// as the version the stat cache last saw committed there: the stamp
// unchanged since chunkvc wrote or hashed it, so nothing of it can be
// lost. A store with other changes stays, for status to show.
func (r *Repo) removeGoneDatasets(cands map[string][]gitdb.Hash, blobs map[string]gitdb.Hash, cache *statcache.Cache) error {
	for p, known := range cands {
		if _, ok := blobs[p]; ok {
			continue
		}
		fi, err := os.Lstat(r.abs(p))
		if err != nil || !fi.IsDir() {
			continue
		}
		st, err := r.datasetStat(p)
		if err != nil {
			return err
		}
		e, ok := cache.Lookup(p, st)
		if !ok {
			continue
		}
		// An entry naming a manifest was made when the members were
		// found (or written) to be that committed version.
		if e.Manifest == "" && !r.digestCommitted(p, e.Digest, known) {
			continue
		}
		if err := os.RemoveAll(r.abs(p)); err != nil {
			return fmt.Errorf("remove dataset %s: %w", p, err)
		}
		cache.Drop(p)
		for d := filepath.Dir(r.abs(p)); len(d) > len(r.Root); d = filepath.Dir(d) {
			if os.Remove(d) != nil {
				break // not empty
			}
		}
	}
	return nil
}

// digestCommitted reports whether one of the manifests known of p has
// digest d.
func (r *Repo) digestCommitted(p string, d hashing.ID, known []gitdb.Hash) bool {
	for _, h := range known {
		if km, _, err := r.git.readManifestBlob(h, p); err == nil && km.Digest == d {
			return true
		}
	}
	return false
}
