package repo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/blockcache"
	"github.com/chunkvc/chunkvc/store"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"
)

// scan reads the file once, storing every new chunk as the read gives it
// (storeChunk): it sets the chunks' IDs, the inline bytes, the digest and
// the blocks' chaining values.
func (j *chunkJob) scan(ctx context.Context) error {
	j.prefetchBase(ctx)
	j.likes = j.r.likelyBases(ctx, j.old, j.chunks, j.up.dryRun)
	opt := j.scanOptions()
	// One read of the file gives the chunks, the inline bytes and the
	// digest, so they agree whatever happens to the file meanwhile.
	// Uploads run on their own pool, as wide as the store likes (S3: 16
	// connections), so round trips overlap with hashing; the pool's limit
	// also bounds the chunk copies in flight.
	sctx, stop := context.WithCancel(ctx)
	j.stop = stop
	uploads, uctx := errgroup.WithContext(sctx)
	j.uploads = uploads
	if j.up.dryRun {
		uploads.SetLimit(1)
	} else {
		uploads.SetLimit(store.Connections(j.up.st))
	}
	// A chunk that may be stored as a delta costs a read of its base and
	// an encode against it (milliseconds): with the slot free it is stored
	// on the side, from a copy, while hashing goes on and during the
	// one-core work that follows the scan; else in the scan, as others.
	j.deltaSlot = semaphore.NewWeighted(1)
	// Which chunks the scan uploaded (with put, not ensure: see keepAdded),
	// by their index in the plan; delta candidates are kept by ensure.
	if !j.up.dryRun {
		j.added = make([]bool, len(j.chunks))
	}
	var err error
	j.digest, j.cvs, err = hashing.Scan(uctx, j.f, j.size, j.pl.ranges, opt, func(i int, id hashing.ID, data []byte) error {
		return j.storeChunk(ctx, uctx, i, id, data)
	})
	if err != nil {
		stop() // the uploads in flight are for nothing
	}
	// An upload error cancels uctx, so Scan then reports only "context
	// canceled": the upload's error is the one to return.
	if werr := uploads.Wait(); werr != nil && (err == nil || errors.Is(err, context.Canceled)) {
		err = werr
	}
	// Only the scan asks them: for a file of 500,000 tiles, tens of MB
	// the manifest's making can have.
	j.known, j.likes, j.uploads = nil, nil, nil
	if errors.Is(err, errChangedWhileRead) {
		return fmt.Errorf("%s changed while it was being read; try again when it is quiet", j.p)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", j.p, err)
	}
	if testHookBlocksReused != nil && j.prev != nil {
		testHookBlocksReused(j.p, int(j.reused.Load()))
	}
	if testHookPiecesKnown != nil && j.prev != nil {
		testHookPiecesKnown(j.p, int(j.quickHits.Load()))
	}
	// The previous entry (a file read whole: 25 MB for 500,000 tiles)
	// gives the new one only its generation.
	if j.prev != nil {
		j.gen = j.prev.Gen + 1
	}
	j.prev = nil
	return nil
}

// prefetchBase starts reading the base of the layout's delta.
func (j *chunkJob) prefetchBase(ctx context.Context) {
	// The previous layout is the base of this one's delta: its chain of
	// deltas is read from the store (from the disk: packs are written
	// around the page cache) while the file is scanned, not after.
	if p, ok := j.up.batch.(store.BasePrefetcher); ok && j.old != nil {
		j.prefetch.Go(func() error {
			p.PrefetchBase(ctx, j.old.Layout)
			return nil
		})
	}
}

// scanOptions are the scan's options, with the block cache's entry of the
// previous version: reuse takes the cached chaining value of a block, and
// quickKnown the ID of a chunk, the entry shows unchanged.
func (j *chunkJob) scanOptions() hashing.ScanOptions {
	opt := hashing.ScanOptions{Workers: j.workers}
	if j.prev != nil {
		j.prints = make([]blockcache.Fingerprint, (j.size+hashing.BlockLen-1)/hashing.BlockLen)
		opt.Reuse = j.reuse
	}
	// The Quick of every chunk goes into the block cache with its ID;
	// a chunk whose Quick the previous version's table holds is not
	// hashed again.
	if j.size > hashing.BlockLen {
		j.quick = make([]hashing.Quick, len(j.pl.chunks))
		opt.QuickSeed = blockcache.NewQuickSeed()
		if seed, ok := j.prev.QuickSeed(); ok {
			opt.QuickSeed = seed
		}
		opt.Quick = j.quickKnown
	}
	j.quickSeed = opt.QuickSeed
	return opt
}

// reuse is hashing.ScanOptions.Reuse: block i's CV from the previous
// version when the block's print is that version's.
func (j *chunkJob) reuse(i int) (hashing.CV, bool) {
	print := j.pl.print(i, j.size, j.derived)
	j.prints[i] = print // the block's pieces are done: the cache entry's print too
	if print == (blockcache.Fingerprint{}) || i >= len(j.prev.Prints) || print != j.prev.Prints[i] {
		return hashing.CV{}, false
	}
	j.reused.Add(1)
	return j.prev.CVs[i], true
}

// quickKnown is hashing.ScanOptions.Quick: it keeps the Quick of part i,
// when a chunk, and gives its ID when the previous version's table has it.
func (j *chunkJob) quickKnown(i int, q hashing.Quick) (hashing.ID, bool) {
	pt := &j.pl.parts[i]
	if pt.kind != chunkPart {
		return hashing.ID{}, false
	}
	j.quick[pt.at] = q
	if j.prev == nil {
		return hashing.ID{}, false
	}
	id, ok := j.prev.Known(q, j.pl.ranges[i].Len)
	if ok {
		j.quickHits.Add(1)
	}
	return id, ok
}

// storeChunk takes part i of the scan, of ID id: it copies inline bytes
// into the plan, checks a derived piece against its recipe's hash, and
// stores a chunk that neither the previous version nor a dry run spares,
// on the side as a delta (deltas) or on the upload pool.
func (j *chunkJob) storeChunk(ctx, uctx context.Context, i int, id hashing.ID, data []byte) error {
	up, pl := j.up, j.pl
	pt := &pl.parts[i]
	switch pt.kind {
	case inlinePart:
		copy(pl.inline[pt.at:], data)
		up.progress.Add(int64(len(data)))
		return nil
	case derivedPart:
		up.progress.Add(int64(len(data)))
		if d := j.derived[pl.piece(i).Off]; (len(d.Parts) == 0 && id != d.ID) || (len(d.Parts) > 0 && id != d.Parts[pt.part]) {
			return errChangedWhileRead
		}
		return nil
	}
	j.chunks[pt.at].ID = id
	if j.isKnown(id) || up.dryRun {
		up.progress.Add(int64(len(data)))
		return nil
	}
	if up.batch != nil {
		like := j.likes(int(pt.at), pl.ranges[i].Off)
		if !like.IsZero() && j.deltaSlot.TryAcquire(1) {
			buf := append([]byte(nil), data...)
			j.deltas.Go(func() error {
				defer j.deltaSlot.Release(1)
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
		j.added[pt.at] = ok
		return err
	}
	buf := append([]byte(nil), data...)
	j.uploads.Go(func() error {
		defer up.progress.Add(int64(len(buf)))
		ok, err := up.put(uctx, id, buf, j.likes(int(pt.at), pl.ranges[i].Off))
		j.added[pt.at] = ok
		return err
	})
	return nil
}

// isKnown reports whether id is a chunk or the layout of the previous
// version, which the store holds already.
func (j *chunkJob) isKnown(id hashing.ID) bool {
	if j.known == nil {
		return false
	}
	if id == j.old.Layout {
		return true
	}
	_, ok := j.known.Find(id)
	return ok
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
	byKey := keyFinder(old.Chunks)
	// Old chunk pieces by offset, from the old layout blob (read only if
	// some key is new: COG tiles keep their keys).
	var starts []int64
	var ids []hashing.ID
	var once sync.Once
	loadOffsets := func() {
		b, _, err := r.read.Get(ctx, old.Layout)
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
		if id, ok := byKey(chunks[i].Key); ok {
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

// keyFinder returns the ID of the chunk of chunks under a key (the last
// one, should two share it). A manifest's chunks are in NaturalLess order
// of key (manifest.Normalize): it searches them, where a map of every key
// would take over 60 bytes a chunk; chunks out of that order have their
// places (4 bytes a chunk) sorted. chunks must not change meanwhile.
func keyFinder(chunks []manifest.Chunk) func(key string) (hashing.ID, bool) {
	cmp := func(a, b string) int {
		switch {
		case a == b:
			return 0
		case manifest.NaturalLess(a, b):
			return -1
		}
		return 1
	}
	at := func(i int) int { return i }
	if !slices.IsSortedFunc(chunks, func(a, b manifest.Chunk) int { return cmp(a.Key, b.Key) }) {
		places := make([]int32, len(chunks))
		for i := range places {
			places[i] = int32(i)
		}
		slices.SortStableFunc(places, func(a, b int32) int { return cmp(chunks[a].Key, chunks[b].Key) })
		at = func(i int) int { return int(places[i]) }
	}
	return func(key string) (hashing.ID, bool) {
		// The first chunk after key; the one before it is the last of key.
		i := sort.Search(len(chunks), func(i int) bool { return cmp(chunks[at(i)].Key, key) > 0 })
		if i > 0 && chunks[at(i-1)].Key == key {
			return chunks[at(i-1)].ID, true
		}
		return hashing.ID{}, false
	}
}
