package repo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chunkvc/chunkvc/geom"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/internal/progress"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/blockcache"
	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
	"github.com/chunkvc/chunkvc/repo/internal/statcache"
	"github.com/chunkvc/chunkvc/store"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"
)

// Verify says how a chunk is confirmed in the store before a commit.
type Verify int

const (
	// VerifySize confirms presence and size (Stat).
	VerifySize Verify = iota
	// VerifyFull reads every new chunk back and re-hashes it.
	VerifyFull
)

// chunked is one file turned into a manifest whose chunks are all stored.
type chunked struct {
	m *manifest.Manifest
	// encoded is the manifest's text; for a file of more than splitAt
	// chunks, the root of its split manifest, and parts its shards.
	encoded []byte
	parts   []manifest.Part
	blob    gitdb.Blob            // the manifest (root) in Git's object store, when committing: set when named's Wait returns
	shards  map[string]gitdb.Blob // the shards' blobs by name, likewise
	fresh   []manifest.Part       // the shards Git does not hold yet, likewise
	named   errgroup.Group        // writing blob; Wait before a Git commit refers to it
	put     errgroup.Group        // writing the block cache's entry
	stat    statcache.Stat
	hashed  int64
}

// splitAt is the chunk count above which a manifest is split (a variable
// for tests).
var splitAt = manifest.SplitAt

// encode sets ch's text: one manifest, or a split one's root and shards.
func (ch *chunked) encode(shardOf func(string) string) (err error) {
	if len(ch.m.Chunks) <= splitAt {
		ch.encoded, err = ch.m.Encode()
		return err
	}
	ch.encoded, ch.parts, err = ch.m.EncodeSplit(shardOf)
	return err
}

// sameText reports whether old is the manifest's text (a split one's root,
// which binds its shards).
func (ch *chunked) sameText(old []byte) bool { return bytes.Equal(old, ch.encoded) }

// putBlobs writes the manifest's Git objects, or with packed only names
// them (Commit packs them with the others). Of a split manifest, only the
// shards that differ from those of the version last read for the file (in
// Git already, reachable from HEAD) are written: one pack of all 8,000
// shards of a 521,623-tile COG grew .git/objects by 26 MB per edit.
func (ch *chunked) putBlobs(g *gitRepo, packed bool) error {
	ch.blob = gitdb.NewBlob(ch.encoded)
	if len(ch.parts) > 0 {
		ch.shards = make(map[string]gitdb.Blob, len(ch.parts))
	}
	stored := g.readShards(ch.m.Path)
	ch.fresh = ch.fresh[:0]
	for _, part := range ch.parts {
		b := gitdb.NewBlob(part.Data)
		ch.shards[part.Name] = b
		if h, ok := stored[part.Name]; !ok || h != b.Hash {
			ch.fresh = append(ch.fresh, part)
		}
	}
	switch {
	case packed:
		return nil
	case len(ch.fresh) >= packBlobsFrom:
		// The thousands of shards of a large file go into one pack, as
		// a commit of many files does: a loose object each cost 2–3 ms
		// (8,000 shards: 20 s of a 521,623-tile commit).
		return g.PutBlobsPacked(ch.packedBlobs())
	}
	for _, part := range ch.fresh {
		if err := g.PutBlob(ch.shards[part.Name], part.Data); err != nil {
			return fmt.Errorf("shard %s: %w", part.Name, err)
		}
	}
	return g.PutBlob(ch.blob, ch.encoded)
}

// packedBlobs is the manifest's new Git objects for a pack.
func (ch *chunked) packedBlobs() []gitdb.PackedBlob {
	out := []gitdb.PackedBlob{{Blob: ch.blob, Data: ch.encoded}}
	for _, part := range ch.fresh {
		out = append(out, gitdb.PackedBlob{Blob: ch.shards[part.Name], Data: part.Data})
	}
	return out
}

// files maps the work-tree path of each file of the manifest that a
// commit writes there (its root, and the shards putBlobs found new) to its
// text: the copies of the others are those of the version replaced.
func (ch *chunked) files() map[string][]byte {
	out := map[string][]byte{manifestPath(ch.m.Path): ch.encoded}
	for _, part := range ch.fresh {
		out[manifest.ShardPath(ch.m.Path, part.Name)] = part.Data
	}
	return out
}

// chunkFile enumerates, hashes and stores file p. loadOld, when not nil,
// returns the previous version (nil if none). Chunks of the previous
// version are not even looked up in the store, and a new chunk is offered
// to the store with the old chunk it most likely resembles, as a delta
// base. The chunks, the inline bytes and the file's digest all come from
// one read (hashing.Scan); when the block cache holds the previous version,
// the digest takes the cached value of every block whose pieces show it
// unchanged.
//
// With up nil nothing is stored: the manifest is computed only (diff of
// the working tree).
func (r *Repo) chunkFile(ctx context.Context, p string, loadOld func() (*manifest.Manifest, error), base version, up *upload, workers int) (_ *chunked, err error) {
	if up == nil {
		up = &upload{progress: progress.Noop{}, dryRun: true}
	}
	f, err := os.Open(r.abs(p))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	before := statcache.StatOf(fi)
	hashedAt := time.Now().UnixNano()
	size := fi.Size()

	// The previous version (its manifest, and the cached blocks of the
	// version the file last was, else of the committed one) is read while
	// the file's layout is parsed: neither needs the other, and each takes
	// milliseconds for a COG of a few thousand tiles.
	var old *manifest.Manifest
	var prev *blockcache.Set
	known := map[hashing.ID]bool{}
	var prevG errgroup.Group
	defer prevG.Wait() //nolint:errcheck // an early return must not leave it reading
	prevG.Go(func() error {
		if loadOld != nil {
			var err error
			if old, err = loadOld(); err != nil {
				return err
			}
		}
		if size > hashing.BlockLen {
			if base.size > hashing.BlockLen {
				prev = r.loadBlocks(base.digest, base.size)
			}
			if prev == nil && old != nil && old.Size > hashing.BlockLen && old.Digest != base.digest {
				prev = r.loadBlocks(old.Digest, old.Size)
			}
		}
		if old != nil {
			for _, c := range old.Chunks {
				known[c.ID] = true
			}
			known[old.Layout] = true
		}
		return nil
	})

	l, err := r.formats.Enumerate(ctx, f, size)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	derived, err := r.checkDerived(ctx, l, f, size)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	// The segments, 112 bytes a tile, are not needed after the plan.
	pl := planScan(l.Segments, len(l.Aliases))
	chunks := pl.chunks
	l.Segments = nil
	if err := prevG.Wait(); err != nil {
		return nil, err
	}
	// The previous layout is the base of this one's delta: its chain of
	// deltas is read from the store (from the disk: packs are written
	// around the page cache) while the file is scanned, not after.
	var prefetch errgroup.Group
	defer prefetch.Wait() //nolint:errcheck // an early return must not leave it reading
	if p, ok := up.batch.(store.BasePrefetcher); ok && old != nil {
		prefetch.Go(func() error {
			p.PrefetchBase(ctx, old.Layout)
			return nil
		})
	}
	likes := r.likelyBases(ctx, old, chunks, up.dryRun)
	var reuse func(i int) (hashing.CV, bool)
	var reused atomic.Int64
	var prints []blockcache.Fingerprint // by block, as reuse made them
	if prev != nil {
		prints = make([]blockcache.Fingerprint, (size+hashing.BlockLen-1)/hashing.BlockLen)
		reuse = func(i int) (hashing.CV, bool) {
			print := pl.print(i, size, derived)
			prints[i] = print // the block's pieces are done: the cache entry's print too
			if print == (blockcache.Fingerprint{}) || i >= len(prev.Prints) || print != prev.Prints[i] {
				return hashing.CV{}, false
			}
			reused.Add(1)
			return prev.CVs[i], true
		}
	}

	// One read of the file gives the chunks, the inline bytes and the
	// digest, so they agree whatever happens to the file meanwhile.
	// Uploads run on their own pool, as wide as the store likes (S3: 16
	// connections), so round trips overlap with hashing; the pool's limit
	// also bounds the chunk copies in flight.
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	uploads, uctx := errgroup.WithContext(sctx)
	if up.dryRun {
		uploads.SetLimit(1)
	} else {
		uploads.SetLimit(store.Connections(up.st))
	}
	// A chunk that may be stored as a delta costs a read of its base and
	// an encode against it (milliseconds): with the slot free it is stored
	// on the side, from a copy, while hashing goes on and during the
	// one-core work that follows the scan; else in the scan, as others.
	var deltas errgroup.Group
	deltaSlot := semaphore.NewWeighted(1)
	defer deltas.Wait() //nolint:errcheck // an early return must not leave it writing
	// The Quick of every chunk goes into the block cache with its ID;
	// a chunk whose Quick the previous version's table holds is not
	// hashed again.
	opt := hashing.ScanOptions{Workers: workers, Reuse: reuse}
	var quick []hashing.Quick // by chunk
	var quickHits atomic.Int64
	if size > hashing.BlockLen {
		quick = make([]hashing.Quick, len(pl.chunks))
		opt.QuickSeed = blockcache.NewQuickSeed()
		if seed, ok := prev.QuickSeed(); ok {
			opt.QuickSeed = seed
		}
		opt.Quick = func(i int, q hashing.Quick) (hashing.ID, bool) {
			pt := &pl.parts[i]
			if pt.kind != chunkPart {
				return hashing.ID{}, false
			}
			quick[pt.at] = q
			if prev == nil {
				return hashing.ID{}, false
			}
			id, ok := prev.Known(q, pl.ranges[i].Len)
			if ok {
				quickHits.Add(1)
			}
			return id, ok
		}
	}
	// Which chunks the scan uploaded (with put, not ensure: see keepAdded),
	// by their index in the plan; delta candidates are kept by ensure.
	var added []bool
	if !up.dryRun {
		added = make([]bool, len(chunks))
	}
	digest, cvs, err := hashing.Scan(uctx, f, size, pl.ranges, opt, func(i int, id hashing.ID, data []byte) error {
		pt := &pl.parts[i]
		switch pt.kind {
		case inlinePart:
			copy(pl.inline[pt.at:], data)
			up.progress.Add(int64(len(data)))
			return nil
		case derivedPart:
			up.progress.Add(int64(len(data)))
			if d := derived[pl.piece(i).Off]; (len(d.parts) == 0 && id != d.id) || (len(d.parts) > 0 && id != d.parts[pt.part]) {
				return errChangedWhileRead
			}
			return nil
		}
		chunks[pt.at].ID = id
		if known[id] || up.dryRun {
			up.progress.Add(int64(len(data)))
			return nil
		}
		if up.batch != nil {
			like := likes(int(pt.at), pl.ranges[i].Off)
			if !like.IsZero() && deltaSlot.TryAcquire(1) {
				buf := append([]byte(nil), data...)
				deltas.Go(func() error {
					defer deltaSlot.Release(1)
					defer up.progress.Add(int64(len(buf)))
					_, err := up.ensure(ctx, id, buf, like)
					return err
				})
				return nil
			}
			// A batch copies data into its pack before Put returns:
			// no copy, no goroutine per chunk.
			defer up.progress.Add(int64(len(data)))
			ok, err := up.put(uctx, id, data, like)
			added[pt.at] = ok
			return err
		}
		buf := append([]byte(nil), data...)
		uploads.Go(func() error {
			defer up.progress.Add(int64(len(buf)))
			ok, err := up.put(uctx, id, buf, likes(int(pt.at), pl.ranges[i].Off))
			added[pt.at] = ok
			return err
		})
		return nil
	})
	if err != nil {
		stop() // the uploads in flight are for nothing
	}
	// An upload error cancels uctx, so Scan then reports only "context
	// canceled": the upload's error is the one to return.
	if werr := uploads.Wait(); werr != nil && (err == nil || errors.Is(err, context.Canceled)) {
		err = werr
	}
	if errors.Is(err, errChangedWhileRead) {
		return nil, fmt.Errorf("%s changed while it was being read; try again when it is quiet", p)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if testHookBlocksReused != nil && prev != nil {
		testHookBlocksReused(p, int(reused.Load()))
	}
	if testHookPiecesKnown != nil && prev != nil {
		testHookPiecesKnown(p, int(quickHits.Load()))
	}

	// The layout blob: inline bytes as read, chunks by id.
	var byRange map[[2]int64]hashing.ID // for aliases, when there are any
	var alias func(i int)
	if len(l.Aliases) > 0 {
		byRange = map[[2]int64]hashing.ID{}
		alias = func(i int) { byRange[[2]int64{pl.ranges[i].Off, pl.ranges[i].Len}] = pl.id(i) }
	}
	layBlob, err := pl.layout(size, derived, alias)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	layID := hashing.Sum(layBlob)
	// Stored while the manifest is made: its delta against the previous
	// layout (a few hundred KiB for a COG of a few thousand tiles) costs
	// as much CPU as the rest of this function.
	var layG errgroup.Group
	if !up.dryRun {
		layG.Go(func() error {
			_ = prefetch.Wait() // PrefetchBase returns before the Put it serves
			_, err := up.ensure(ctx, layID, layBlob, likeLayout(old))
			return err
		})
	}
	defer layG.Wait() //nolint:errcheck // an early return must not leave it writing

	// Bytes that changed under us would make chunks and digest disagree.
	fi2, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if statcache.StatOf(fi2) != before {
		return nil, fmt.Errorf("%s changed while it was being read; try again when it is quiet", p)
	}

	for _, a := range l.Aliases {
		chunks = append(chunks, manifest.Chunk{Key: a.Key, Size: a.Len, ID: byRange[[2]int64{a.Off, a.Len}], BBox: bbox(a.BBox)})
	}
	// The block cache entry's prints and quick records, from the plan
	// (prints as blockcache.LayoutPrints gives them for the layout, which a checkout
	// computes them from). Prints and chaining values come from the same
	// read: the entry holds together even for a file written while it was
	// read.
	var bs *blockcache.Set
	var recs *blockcache.Records
	if !up.dryRun {
		var gen uint32
		if prev != nil {
			gen = prev.Gen + 1
		}
		bs = &blockcache.Set{Gen: gen, Prints: pl.prints(size, derived, prints), CVs: cvs}
		if quick != nil {
			recs = blockcache.NewRecords(opt.QuickSeed, len(pl.chunks))
			for i, pt := range pl.parts {
				if pt.kind == chunkPart {
					recs.Put(quick[pt.at], pl.ranges[i].Len, chunks[pt.at].ID)
				}
			}
		}
	}
	// The plan and the Quicks take about 150 bytes a tile, as much as the
	// manifest's text: they go before it is made.
	pl, quick = nil, nil
	if !up.dryRun {
		up.keepAdded(chunks, added) // in the plan's order, before Normalize sorts them
		added = nil
	}
	if chunks, err = manifest.Normalize(chunks); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	m := &manifest.Manifest{
		Path: p, Format: l.Format, FormatVersion: l.Version, Params: manifest.SanitizeValue(l.Params),
		Fallback: manifest.SanitizeValue(l.Fallback), Size: size, Digest: digest, Layout: layID,
		LayoutSize: int64(len(layBlob)), Chunks: chunks,
	}
	for _, fld := range l.Summary {
		m.Summary = append(m.Summary, manifest.Field{Name: fld.Name, Value: manifest.SanitizeValue(fld.Value)})
	}
	ch := &chunked{m: m, stat: before, hashed: hashedAt}
	if err := ch.encode(r.formats.ShardOf(m.Format)); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if !up.dryRun {
		replaced := []hashing.ID{base.digest}
		if old != nil {
			replaced = append(replaced, old.Digest)
		}
		// A cache: made and written while the commit goes on.
		ch.put.Go(func() error {
			if recs != nil {
				bs.SetQuick(recs)
			}
			r.saveBlocks(digest, size, bs, replaced...)
			return nil
		})
		// Written (deflated) while the commit goes on, other files and
		// the store's batch included, or packed with the others by
		// Commit; Commit waits for it before the Git commit that refers
		// to it. Unreachable until then, and git gc prunes it if the
		// commit fails.
		ch.named.Go(func() error {
			if err := ch.putBlobs(r.git, up.packManifests); err != nil {
				return fmt.Errorf("%s: write git object for its manifest: %w", p, err)
			}
			return nil
		})
	}
	if err := deltas.Wait(); err != nil {
		_, _ = ch.put.Wait(), ch.named.Wait()
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if err := layG.Wait(); err != nil {
		_, _ = ch.put.Wait(), ch.named.Wait()
		return nil, fmt.Errorf("%s: layout: %w", p, err)
	}
	return ch, nil
}

// likelyBases returns, for chunk i of chunks, at offset off of the file,
// the chunk of old that its bytes most probably resemble: the chunk under
// the same key, else the old chunk that covered the same file offset
// (content-keyed chunks, blocks whose key moved). Zero when there is none.
func (r *Repo) likelyBases(ctx context.Context, old *manifest.Manifest, chunks []manifest.Chunk, dryRun bool) func(i int, off int64) hashing.ID {
	none := func(int, int64) hashing.ID { return hashing.ID{} }
	if old == nil || dryRun {
		return none
	}
	byKey := make(map[string]hashing.ID, len(old.Chunks))
	for _, c := range old.Chunks {
		byKey[c.Key] = c.ID
	}
	// Old chunk pieces by offset, from the old layout blob (read only if
	// some key is new: COG tiles keep their keys).
	var starts []int64
	var ids []hashing.ID
	var once sync.Once
	loadOffsets := func() {
		b, _, err := r.read.get(ctx, old.Layout)
		if err != nil {
			return // no base: the chunk is stored whole
		}
		lay, err := manifest.DecodeLayout(b)
		if err != nil {
			return
		}
		var off int64
		for _, pc := range lay.Pieces {
			if pc.Chunk {
				starts, ids = append(starts, off), append(ids, pc.ID)
			}
			off += pc.Len
		}
	}
	var mu sync.Mutex
	return func(i int, off int64) hashing.ID {
		if id, ok := byKey[chunks[i].Key]; ok {
			return id
		}
		mu.Lock()
		defer mu.Unlock()
		once.Do(loadOffsets)
		j := sort.Search(len(starts), func(j int) bool { return starts[j] > off }) - 1
		if j < 0 {
			return hashing.ID{}
		}
		return ids[j]
	}
}

// likeLayout is the delta base of a new layout blob: the old one.
func likeLayout(old *manifest.Manifest) hashing.ID {
	if old == nil {
		return hashing.ID{}
	}
	return old.Layout
}

// bbox is a segment's footprint as the manifest holds it: the same
// memory, not a copy per chunk.
func bbox(b *geom.BBox) *geom.BBox {
	if b == nil || !b.Valid() {
		return nil
	}
	return b
}
