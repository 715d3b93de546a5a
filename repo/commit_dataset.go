package repo

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"sort"
	"time"

	"github.com/chunkvc/chunkvc/formats/zarr"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/internal/progress"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/dataset"
	"github.com/chunkvc/chunkvc/repo/internal/statcache"
	"golang.org/x/sync/errgroup"
)

// Datasets in a commit (docs/DATASETS.md). A tracked dataset, a Zarr
// store's directory, is one path of the commit, like a file: its manifest
// is at .chunkvc/manifests/<dir>, always split, sharded by array and
// region of the chunk grid (zarr.Sharder); its layout blob is the dataset
// layout (manifest.EncodeDataset) and its digest the dataset digest. The
// stat cache holds one entry for it, whose Stat is the store's stamp
// (datasetStat), so that a store no file of which changed is not read.

// datasetStat is the Stat that stands for dataset p in the stat cache:
// its stamp (dataset.StampOf) folded into one. Size is the members'
// total, the times the newest of them (the racy-clean rule then applies
// to the store as a whole), and Ino a digest of every member's path and
// stat, so that any member added, removed or touched changes it.
func (r *Repo) datasetStat(p string) (statcache.Stat, error) {
	s, err := dataset.StampOf(r.abs(p))
	if err != nil {
		return statcache.Stat{}, err
	}
	return statcache.Stat{Size: s.Size, Mtime: s.Newest, Ctime: s.Newest, Ino: binary.LittleEndian.Uint64(s.Sum[:8])}, nil
}

// statTracked is the stat cache's Stat of tracked path p, whose lstat
// statFiles gave: a regular file's own, a dataset's datasetStat.
func (r *Repo) statTracked(p string, fi fileInfo) (statcache.Stat, error) {
	if fi.err != nil {
		return statcache.Stat{}, fi.err
	}
	if r.Config.IsDataset(p) {
		if !fi.fi.IsDir() {
			return statcache.Stat{}, fmt.Errorf("dataset %s is not a directory (symbolic links are not followed)", p)
		}
		return r.datasetStat(p)
	}
	if !fi.fi.Mode().IsRegular() {
		return statcache.Stat{}, fmt.Errorf("%s is not a regular file (symbolic links are not followed)", p)
	}
	return statcache.StatOf(fi.fi), nil
}

// chunkDataset hashes and stores dataset p, as chunkFile does a file:
// every chunk read once, new chunks offered to the store with the
// previous chunk of the same key as their delta base, the layout blob
// with the previous one. With up nil nothing is stored (status, diff of
// the work tree).
func (r *Repo) chunkDataset(ctx context.Context, p string, loadOld func() (*manifest.Manifest, error), up *upload, workers int) (*chunked, error) {
	if up == nil {
		up = &upload{progress: progress.Noop{}, dryRun: true}
	}
	before, err := r.datasetStat(p)
	if err != nil {
		return nil, err
	}
	hashedAt := time.Now().UnixNano()
	var old *manifest.Manifest
	if loadOld != nil {
		if old, err = loadOld(); err != nil {
			return nil, err
		}
	}
	plan, err := dataset.Build(r.abs(p))
	if err != nil {
		return nil, err
	}
	ids, err := hashDataset(ctx, r.abs(p), plan, old, up, workers)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", p, err)
	}
	layout, chunks, digest, err := plan.Encode(ids)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", p, err)
	}
	m := &manifest.Manifest{Path: p, Format: zarr.Format, FormatVersion: 1, Digest: digest,
		Layout: hashing.Sum(layout), LayoutSize: int64(len(layout)), Chunks: chunks}
	for _, f := range plan.Files {
		m.Size += f.Size
	}
	for _, f := range zarr.Summary(plan.Store) {
		m.Summary = append(m.Summary, manifest.Field{Name: f.Name, Value: manifest.SanitizeValue(f.Value)})
	}
	if !up.dryRun {
		if _, err := up.ensure(ctx, m.Layout, layout, likeLayout(old)); err != nil {
			return nil, fmt.Errorf("dataset %s: layout: %w", p, err)
		}
	}
	after, err := r.datasetStat(p)
	if err != nil {
		return nil, err
	}
	if after != before {
		return nil, fmt.Errorf("dataset %s changed while it was being read; try again when it is quiet", p)
	}
	ch := &chunked{m: m, stat: before, hashed: hashedAt}
	if ch.encoded, ch.parts, err = m.EncodeSplit(zarr.Sharder{}.Shard); err != nil {
		return nil, fmt.Errorf("dataset %s: %w", p, err)
	}
	if !up.dryRun {
		packed := up.packManifests
		ch.named.Go(func() error {
			if err := ch.putBlobs(r.git, packed); err != nil {
				return fmt.Errorf("%s: write git object for its manifest: %w", p, err)
			}
			return nil
		})
	}
	return ch, nil
}

// hashDataset reads every chunk of plan from the store at dir, several at
// once (a store is thousands of small files), and returns their IDs in
// plan order. A chunk the previous version old holds is not offered to
// the store again; a new one is, with the ID old had under the same key
// as its delta base.
func hashDataset(ctx context.Context, dir string, plan *dataset.Plan, old *manifest.Manifest, up *upload, workers int) ([]hashing.ID, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	var known *manifest.IDIndex
	if old != nil {
		known = manifest.NewIDIndex(old.Chunks)
	}
	ids := make([]hashing.ID, len(plan.Chunks))
	g, gctx := errgroup.WithContext(ctx)
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	// Reads of small files wait on the file system more than on the CPU.
	g.SetLimit(2 * workers)
	for i, src := range plan.Chunks {
		g.Go(func() error {
			data, err := readSource(root, src)
			if err != nil {
				return err
			}
			id := hashing.Sum(data)
			ids[i] = id
			up.progress.Add(src.Len)
			if up.dryRun || known != nil && known.Len() > 0 && knownID(known, id) {
				return nil
			}
			_, err = up.ensure(gctx, id, data, oldID(old, src.Key))
			return err
		})
	}
	return ids, g.Wait()
}

// knownID reports whether x, an index of a manifest's chunks, holds id.
func knownID(x *manifest.IDIndex, id hashing.ID) bool {
	_, ok := x.Find(id)
	return ok
}

// readSource reads the bytes of one chunk of a store.
func readSource(root *os.Root, src dataset.Source) ([]byte, error) {
	f, err := root.Open(src.Path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data := make([]byte, src.Len)
	if n, err := f.ReadAt(data, src.Off); n < len(data) {
		return nil, fmt.Errorf("%s: bytes %d..+%d: %w", src.Path, src.Off, src.Len, err)
	}
	return data, nil
}

// oldID is the ID old (sorted by manifest.NaturalLess) had under key, the
// zero ID if none: a content-keyed piece ("key@…") finds its
// predecessor's by prefix no better than by position, so only exact keys
// are looked up.
func oldID(old *manifest.Manifest, key string) hashing.ID {
	if old == nil {
		return hashing.ID{}
	}
	cs := old.Chunks
	i := sort.Search(len(cs), func(i int) bool { return !manifest.NaturalLess(cs[i].Key, key) })
	if i < len(cs) && cs[i].Key == key {
		return cs[i].ID
	}
	return hashing.ID{}
}
