package repo

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync/atomic"
	"time"

	"github.com/chunkvc/chunkvc/formats/zarr"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/internal/progress"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/dataset"
	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
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
// its stamp (dataset.StampOf), folded by stampStat.
func (r *Repo) datasetStat(p string) (statcache.Stat, error) {
	s, err := dataset.StampOf(r.abs(p))
	if err != nil {
		return statcache.Stat{}, err
	}
	return stampStat(s), nil
}

// datasetFile queues dataset p, whose lstat statFiles gave (h its
// manifest in HEAD when inPrev), to be chunked: whether it changed is
// decided as it is walked (commitFile.same).
func (j *commitJob) datasetFile(p string, fi fileInfo, h gitdb.Hash, inPrev bool) (*commitFile, error) {
	if fi.err != nil {
		return nil, fi.err
	}
	if !fi.fi.IsDir() {
		return nil, fmt.Errorf("dataset %s is not a directory (symbolic links are not followed)", p)
	}
	f := &commitFile{p: p}
	if inPrev {
		f.prev = h
		f.same = func(st statcache.Stat) bool { return j.cache.Unchanged(p, st, h) }
	}
	return f, nil
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
// with the previous one. A file whose lstat matches what the seen cache
// recorded is not read again. With up nil nothing is stored (status, diff
// of the work tree).
//
// When same reports that the store's stamp is that of HEAD's version,
// nothing is read and the result has no manifest (m nil), only the stat.
func (r *Repo) chunkDataset(ctx context.Context, p string, loadOld func() (*manifest.Manifest, error), up *upload, workers int, same func(statcache.Stat) bool) (*chunked, error) {
	if up == nil {
		up = &upload{progress: progress.Noop{}, dryRun: true}
	}
	hashedAt := time.Now().UnixNano()
	// The seen cache's size says about how many files the store had (an
	// entry takes 60-70 bytes; 56 errs on more room): room for them is
	// made at once.
	hint := 0
	if fi, err := os.Stat(r.seenPath(p)); err == nil {
		hint = int(fi.Size() / 56)
	}
	plan, err := dataset.BuildSized(r.abs(p), hint)
	if err != nil {
		return nil, err
	}
	stat := stampStat(plan.Stamp())
	if same != nil && same(stat) {
		return &chunked{stat: stat}, nil
	}
	var old *manifest.Manifest
	if loadOld != nil {
		if old, err = loadOld(); err != nil {
			return nil, err
		}
	}
	h := &datasetHash{dir: r.abs(p), plan: plan, old: old, up: up, workers: workers, seen: r.seenPath(p)}
	lines, err := h.run(ctx)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", p, err)
	}
	if h.marks == nil || h.racy.Load() > 0 || h.read.Load() > int64(seenSlack(len(plan.Chunks))) {
		_ = h.saveSeen(r.seenPath(p), hashedAt, lines) // a cache: rebuilt when lost
	}
	// Where each chunk lies is done with (48 bytes a chunk), as is h (the
	// seen cache's order and marks, the old IDs' index), no longer used:
	// they go before the manifest is made.
	read := h.read.Load()
	plan.Chunks = nil
	layout, chunks, digest, err := plan.Encode(lines)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", p, err)
	}
	m := &manifest.Manifest{Path: p, Format: zarr.Format, FormatVersion: 1, Digest: digest,
		Layout: hashing.Sum(layout), LayoutSize: int64(len(layout)), Chunks: chunks}
	for i := range plan.Files {
		m.Size += plan.Files[i].Size()
	}
	for _, f := range append(zarr.Summary(plan.Store), plan.Footprints(r.abs(p), chunks)...) {
		m.Summary = append(m.Summary, manifest.Field{Name: f.Name, Value: manifest.SanitizeValue(f.Value)})
	}
	if !up.dryRun {
		if _, err := up.ensure(ctx, m.Layout, layout, likeLayout(old)); err != nil {
			return nil, fmt.Errorf("dataset %s: layout: %w", p, err)
		}
	}
	ch := &chunked{m: m, stat: stat, hashed: hashedAt, read: read}
	if ch.encoded, ch.parts, err = m.EncodeSplit(zarr.Sharder{}.Shard); err != nil {
		return nil, fmt.Errorf("dataset %s: %w", p, err)
	}
	if !up.dryRun {
		r.startNamed(ch, p, up.packManifests)
	}
	return ch, nil
}

// seenSlack is how many chunks of a store of n may be read without the
// seen cache being rewritten (unless some were read only because their
// record was too recent to trust): the files changed since it was saved
// are read again by the next commit or status, which for a few files
// costs less than rewriting the record of every file (6 MB for 100,000).
func seenSlack(n int) int { return max(64, n/64) }

// seenPath is the seen cache of dataset p (dataset.MatchSeen).
func (r *Repo) seenPath(p string) string {
	return filepath.Join(r.gitDir(), "chunkvc", "seen", hashing.Sum([]byte(p)).String()[:16])
}

// datasetHash is one hashing of a store's chunks: run reads every chunk of
// plan from the store at dir, several at once (a store is thousands of
// small files), and returns their chunk lines in plan order. A chunk the seen
// cache trusts, of a file whose lstat is the walk's, is not read when the
// previous version old holds it (or nothing is stored); one read is
// checked against the walk's lstat afterwards (a file written while it
// was read fails the commit). A chunk old holds is not offered to the
// store again; a new one is, with the ID old had under the same key as
// its delta base.
type datasetHash struct {
	dir     string
	plan    *dataset.Plan
	old     *manifest.Manifest
	up      *upload
	workers int
	seen    string // the seen cache's file ("": none)

	order []int32            // plan's chunks in the seen cache's order
	marks []dataset.SeenMark // what the seen cache said of each chunk (nil: no cache)
	known *manifest.IDIndex
	read  atomic.Int64 // chunks read
	racy  atomic.Int64 // of those, chunks the seen cache had with the same stat, too recent to trust then
}

// seenKey is chunk i of the plan as the seen cache knows it.
func (h *datasetHash) seenKey(i int) dataset.SeenKey {
	src := &h.plan.Chunks[i]
	st, _ := h.plan.FileStat(src.Path) // run found every one
	return dataset.SeenKey{Path: src.Path, Off: src.Off, Len: src.Len, Stat: st}
}

// saveSeen writes the seen cache of this reading, which began at hashed:
// every chunk's ID with the lstat of its file (one read was checked
// against it after reading; one the old cache trusted had it).
func (h *datasetHash) saveSeen(name string, hashed int64, lines []manifest.Chunk) error {
	return dataset.WriteSeen(name, hashed, len(h.order), func(k int) (dataset.SeenKey, hashing.ID) {
		i := int(h.order[k])
		return h.seenKey(i), lines[i].ID
	})
}

// matchSeen reads the seen cache at name against the plan, writing the
// IDs it trusts to lines.
func (h *datasetHash) matchSeen(name string, lines []manifest.Chunk) {
	h.order = h.plan.ChunkOrder()
	var ok bool
	h.marks, ok = dataset.MatchSeen(name, statcache.FSWindow(h.dir), len(h.order), func(k int) (int, dataset.SeenKey) {
		i := int(h.order[k])
		return i, h.seenKey(i)
	}, func(i int, id hashing.ID) { lines[i].ID = id })
	if !ok {
		h.marks = nil
	}
}

func (h *datasetHash) run(ctx context.Context) ([]manifest.Chunk, error) {
	root, err := os.OpenRoot(h.dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	if h.old != nil {
		h.known = manifest.NewIDIndex(h.old.Chunks)
	}
	lines := h.plan.ChunkLines()
	if h.seen != "" {
		h.matchSeen(h.seen, lines)
	}
	g, gctx := errgroup.WithContext(ctx)
	workers := h.workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	// Reads of small files wait on the file system more than on the CPU.
	g.SetLimit(2 * workers)
	for i, src := range h.plan.Chunks {
		st, ok := h.plan.FileStat(src.Path)
		if !ok {
			return nil, fmt.Errorf("%s: not in the store's listing", src.Path)
		}
		if h.mark(i) == dataset.SeenTrusted && (h.up.dryRun || h.isKnown(lines[i].ID)) {
			continue
		}
		g.Go(func() error {
			id, err := h.chunk(gctx, root, i, st)
			lines[i].ID = id
			return err
		})
	}
	return lines, g.Wait()
}

// mark is what the seen cache said of chunk i.
func (h *datasetHash) mark(i int) dataset.SeenMark {
	if h.marks == nil {
		return dataset.SeenNone
	}
	return h.marks[i]
}

// chunk reads, hashes and stores chunk i of the plan, of a file whose
// walk lstat was st.
func (h *datasetHash) chunk(ctx context.Context, root *os.Root, i int, st statcache.Stat) (hashing.ID, error) {
	src := h.plan.Chunks[i]
	data, err := readSource(root, src)
	if err != nil {
		return hashing.ID{}, err
	}
	if fi, err := root.Lstat(src.Path); err != nil || statcache.StatOf(fi) != st {
		return hashing.ID{}, fmt.Errorf("%s changed while it was being read; try again when it is quiet", src.Path)
	}
	id := hashing.Sum(data)
	h.read.Add(1)
	if h.mark(i) == dataset.SeenRacy {
		h.racy.Add(1) // recorded again now, it will be trusted
	}
	h.up.progress.Add(src.Len)
	if h.up.dryRun || h.isKnown(id) {
		return id, nil
	}
	_, err = h.up.ensure(ctx, id, data, oldID(h.old, src.Key))
	return id, err
}

// isKnown reports whether the previous version holds chunk id.
func (h *datasetHash) isKnown(id hashing.ID) bool {
	if h.known == nil {
		return false
	}
	_, ok := h.known.Find(id)
	return ok
}

// stampStat folds a store's stamp into the Stat that stands for it in the
// stat cache: Size the members' total, the times the newest of theirs (so
// the racy-clean rule applies to the store as a whole), Ino a digest of
// every member's path and lstat, so that any member added, removed or
// touched changes it.
func stampStat(s dataset.Stamp) statcache.Stat {
	return statcache.Stat{Size: s.Size, Mtime: s.Newest, Ctime: s.Newest, Ino: binary.LittleEndian.Uint64(s.Sum[:8])}
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
