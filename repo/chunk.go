package repo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/internal/progress"
	"github.com/chunkvc/chunkvc/manifest"
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

// upload de-duplicates puts across the files of one commit and counts them.
// When the store takes batches (store.Batcher: the local store packs them),
// chunks go into one batch that finish commits and verifies; otherwise each
// chunk is put and verified on its own.
type upload struct {
	st       store.Store
	verify   Verify
	seen     sync.Map // hashing.ID → struct{}
	chunks   atomic.Int64
	bytes    atomic.Int64
	progress progress.Counter
	dryRun   bool // compute manifests only, store nothing

	batch store.Batch
	mu    sync.Mutex
	// stored holds every chunk this upload stored, by size. Without a batch
	// each was verified when put; with one, finish verifies them all.
	stored map[hashing.ID]int64
}

// newUpload prepares uploads to st, in a batch when st takes them.
func newUpload(ctx context.Context, st store.Store, v Verify, prog progress.Counter) (*upload, error) {
	u := &upload{st: st, verify: v, progress: progress.OrNoop(prog), stored: map[hashing.ID]int64{}}
	if b, ok := st.(store.Batcher); ok {
		batch, err := b.Batch(ctx)
		if err != nil {
			return nil, fmt.Errorf("store %s: %w", st, err)
		}
		u.batch = batch
	}
	return u, nil
}

// finish makes the batch's chunks durable and verifies every one of them;
// nothing may refer to them (a Git commit) before it returns nil.
func (u *upload) finish(ctx context.Context) error {
	if u.batch == nil {
		return nil
	}
	b := u.batch
	u.batch = nil
	if err := b.Commit(ctx); err != nil {
		return fmt.Errorf("store %s: %w", u.st, err)
	}
	if err := store.VerifyMany(ctx, u.st, u.stored, u.verify == VerifyFull); err != nil {
		return fmt.Errorf("store %s: verify chunks: %w", u.st, err)
	}
	return nil
}

// abort drops a batch that will not be committed (an error on the way).
func (u *upload) abort() {
	if u.batch != nil {
		_ = u.batch.Abort()
		u.batch = nil
	}
}

// ensure makes sure the store holds id (data), putting and verifying it if
// not; like names a chunk data probably resembles (store.Batch.Put). data
// must hash to id: every caller hashed or verified it just before. It
// reports whether the chunk was uploaded.
func (u *upload) ensure(ctx context.Context, id hashing.ID, data []byte, like hashing.ID) (bool, error) {
	if _, dup := u.seen.LoadOrStore(id, struct{}{}); dup {
		return false, nil
	}
	if u.batch != nil {
		// The batch looks for id itself: asking first would cost a second
		// look per new chunk.
		added, err := u.batch.Put(ctx, id, data, like)
		if err != nil {
			u.seen.Delete(id)
			return false, fmt.Errorf("store %s: put chunk %s: %w", u.st, id, err)
		}
		if !added {
			u.touch(ctx, id)
			return false, nil
		}
		u.mu.Lock()
		u.stored[id] = int64(len(data))
		u.mu.Unlock()
		u.chunks.Add(1)
		u.bytes.Add(int64(len(data)))
		return true, nil
	}
	has, err := store.Has(ctx, u.st, id)
	if err != nil {
		u.seen.Delete(id)
		return false, fmt.Errorf("store %s: chunk %s: %w", u.st, id, err)
	}
	if has {
		u.touch(ctx, id)
		return false, nil
	}
	if err := u.st.Put(ctx, id, data); err != nil {
		u.seen.Delete(id)
		return false, fmt.Errorf("store %s: put chunk %s: %w", u.st, id, err)
	}
	if err := store.Verify(ctx, u.st, id, int64(len(data)), u.verify == VerifyFull); err != nil {
		u.seen.Delete(id)
		return false, fmt.Errorf("store %s: verify chunk %s: %w", u.st, id, err)
	}
	u.mu.Lock()
	u.stored[id] = int64(len(data))
	u.mu.Unlock()
	u.chunks.Add(1)
	u.bytes.Add(int64(len(data)))
	return true, nil
}

// credit counts the chunks of m that this upload stored and that no file
// credited before (credited records them): called for the files of a
// commit in path order, it gives each new chunk to the first file holding
// it, whatever order the files were hashed in.
func (u *upload) credit(m *manifest.Manifest, credited map[hashing.ID]bool) (chunks int, bytes int64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, c := range m.Chunks {
		if _, ok := u.stored[c.ID]; ok && !credited[c.ID] {
			credited[c.ID] = true
			chunks++
			bytes += c.Size
		}
	}
	return chunks, bytes
}

// touch refreshes the age of a chunk a commit reuses, where the store can,
// so that a gc elsewhere does not take it for garbage while the commit is
// in flight.
func (u *upload) touch(ctx context.Context, id hashing.ID) {
	if t, ok := u.st.(interface {
		Touch(context.Context, hashing.ID) error
	}); ok {
		_ = t.Touch(ctx, id)
	}
}

// chunked is one file turned into a manifest whose chunks are all stored.
type chunked struct {
	m       *manifest.Manifest
	encoded []byte
	blob    blob           // the manifest in Git's object store, when committing
	put     errgroup.Group // writing blob; Wait before a Git commit refers to it
	stat    fileStat
	hashed  int64
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
	before := statOf(fi)
	hashedAt := time.Now().UnixNano()
	size := fi.Size()

	// The previous version (its manifest, and the cached blocks of the
	// version the file last was, else of the committed one) is read while
	// the file's layout is parsed: neither needs the other, and each takes
	// milliseconds for a COG of a few thousand tiles.
	var old *manifest.Manifest
	var prev *blockSet
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
	segs := l.Chunks()
	pl := planScan(l.Segments)
	if err := prevG.Wait(); err != nil {
		return nil, err
	}
	likes := r.likelyBases(ctx, old, segs, up.dryRun)
	ids := make([]hashing.ID, len(segs))
	inline := make([][]byte, len(pl.parts))
	var reuse func(i int) (hashing.CV, bool)
	var reused atomic.Int64
	if prev != nil {
		reuse = func(i int) (hashing.CV, bool) {
			print := pl.print(i, size, derived)
			if print == (fingerprint{}) || i >= len(prev.prints) || print != prev.prints[i] {
				return hashing.CV{}, false
			}
			reused.Add(1)
			return prev.cvs[i], true
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
		uploads.SetLimit(connections(up.st))
	}
	// A chunk that may be stored as a delta costs a read of its base and
	// an encode against it (milliseconds): with the slot free it is stored
	// on the side, from a copy, while hashing goes on and during the
	// one-core work that follows the scan; else in the scan, as others.
	var deltas errgroup.Group
	deltaSlot := semaphore.NewWeighted(1)
	defer deltas.Wait() //nolint:errcheck // an early return must not leave it writing
	// The Quick of every piece goes into the block cache with its ID;
	// a chunk piece whose Quick the previous version's table holds is
	// not hashed again.
	opt := hashing.ScanOptions{Workers: workers, Reuse: reuse}
	var quick []hashing.Quick
	var quickHits atomic.Int64
	if size > hashing.BlockLen {
		quick = make([]hashing.Quick, len(pl.ranges))
		opt.QuickSeed = newQuickSeed()
		if prev != nil && len(prev.quick) > 0 {
			opt.QuickSeed = prev.seed
		}
		opt.Quick = func(i int, q hashing.Quick) (hashing.ID, bool) {
			quick[i] = q
			if pt := &pl.parts[i]; prev == nil || pt.inline || pt.derive != "" {
				return hashing.ID{}, false
			}
			id, ok := prev.known(q, pl.ranges[i].Len)
			if ok {
				quickHits.Add(1)
			}
			return id, ok
		}
	}
	digest, cvs, err := hashing.Scan(uctx, f, size, pl.ranges, opt, func(i int, id hashing.ID, data []byte) error {
		pt := &pl.parts[i]
		pl.ids[i] = id
		switch {
		case pt.inline:
			inline[i] = append(inline[i], data...)
			up.progress.Add(int64(len(data)))
			return nil
		case pt.derive != "":
			up.progress.Add(int64(len(data)))
			if d := derived[pt.seg.Off]; (len(d.parts) == 0 && id != d.id) || (len(d.parts) > 0 && id != d.parts[pt.part]) {
				return errChangedWhileRead
			}
			return nil
		}
		ids[pt.chunk] = id
		if known[id] || up.dryRun {
			up.progress.Add(int64(len(data)))
			return nil
		}
		if up.batch != nil {
			like := likes(pt.chunk)
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
			_, err := up.ensure(uctx, id, data, like)
			return err
		}
		buf := append([]byte(nil), data...)
		uploads.Go(func() error {
			defer up.progress.Add(int64(len(buf)))
			_, err := up.ensure(uctx, id, buf, likes(pt.chunk))
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
	var lay manifest.Layout
	var byRange map[[2]int64]hashing.ID // for aliases, when there are any
	if len(l.Aliases) > 0 {
		byRange = map[[2]int64]hashing.ID{}
	}
	for i, pt := range pl.parts {
		rg := pl.ranges[i]
		switch {
		case pt.inline: // parts of one run merge again
			lay.Append(manifest.Piece{Len: rg.Len, Inline: inline[i]})
		case pt.derive != "":
			if pt.first() {
				lay.Append(manifest.Piece{Len: pt.seg.Len, Derive: pt.derive, ID: derived[pt.seg.Off].id})
			}
		default:
			lay.Append(manifest.Piece{Len: rg.Len, Chunk: true, ID: ids[pt.chunk]})
			if byRange != nil {
				byRange[[2]int64{rg.Off, rg.Len}] = ids[pt.chunk]
			}
		}
	}
	layBlob := lay.Encode()
	layID := hashing.Sum(layBlob)
	// Stored while the manifest is made: its delta against the previous
	// layout (a few hundred KiB for a COG of a few thousand tiles) costs
	// as much CPU as the rest of this function.
	var layG errgroup.Group
	if !up.dryRun {
		layG.Go(func() error {
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
	if statOf(fi2) != before {
		return nil, fmt.Errorf("%s changed while it was being read; try again when it is quiet", p)
	}

	chunks := make([]manifest.Chunk, 0, len(segs)+len(l.Aliases))
	for i, s := range segs {
		chunks = append(chunks, manifest.Chunk{Key: s.Key, Size: s.Len, ID: ids[i], BBox: bbox(s.BBox)})
	}
	for _, a := range l.Aliases {
		chunks = append(chunks, manifest.Chunk{Key: a.Key, Size: a.Len, ID: byRange[[2]int64{a.Off, a.Len}], BBox: bbox(a.BBox)})
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
	enc, err := m.Encode()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	ch := &chunked{m: m, encoded: enc, stat: before, hashed: hashedAt}
	if !up.dryRun {
		replaced := []hashing.ID{base.digest}
		if old != nil {
			replaced = append(replaced, old.Digest)
		}
		var gen uint32
		if prev != nil {
			gen = prev.gen + 1
		}
		// Prints and chaining values come from the same read: the
		// entry holds together even for a file written while it was read.
		// A cache: made and written while the commit goes on.
		ch.put.Go(func() error {
			// Prints from the layout, as a checkout computes them.
			bs := &blockSet{gen: gen, prints: layoutPrints(&lay, size), cvs: cvs}
			if quick != nil {
				recs := make([]quickRecord, 0, len(segs))
				for i, pt := range pl.parts {
					if n := pl.ranges[i].Len; n > 0 && !pt.inline && pt.derive == "" {
						recs = append(recs, quickRecord{quick[i], n, pl.ids[i]})
					}
				}
				bs.setQuick(opt.QuickSeed, recs)
			}
			r.saveBlocks(digest, size, bs, replaced...)
			return nil
		})
		// Written (deflated) while the commit goes on, other files and
		// the store's batch included; Commit waits for it before the Git
		// commit that refers to it. Unreachable until then, and git gc
		// prunes it if the commit fails.
		ch.blob = newBlob(enc)
		ch.put.Go(func() error {
			if err := r.git.putBlob(ch.blob, enc); err != nil {
				return fmt.Errorf("%s: write git object for its manifest: %w", p, err)
			}
			return nil
		})
	}
	if err := deltas.Wait(); err != nil {
		_ = ch.put.Wait()
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if err := layG.Wait(); err != nil {
		_ = ch.put.Wait()
		return nil, fmt.Errorf("%s: layout: %w", p, err)
	}
	return ch, nil
}

// likelyBases returns, for segment i of segs, the chunk of old that its
// bytes most probably resemble: the chunk under the same key, else the old
// chunk that covered the same file offset (content-keyed chunks, blocks
// whose key moved). Zero when there is none.
func (r *Repo) likelyBases(ctx context.Context, old *manifest.Manifest, segs []formats.Segment, dryRun bool) func(i int) hashing.ID {
	none := func(int) hashing.ID { return hashing.ID{} }
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
	return func(i int) hashing.ID {
		s := segs[i]
		if id, ok := byKey[s.Key]; ok {
			return id
		}
		mu.Lock()
		defer mu.Unlock()
		once.Do(loadOffsets)
		j := sort.Search(len(starts), func(j int) bool { return starts[j] > s.Off }) - 1
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

func bbox(b *formats.BBox) *[4]float64 {
	if b == nil || !manifest.ValidBBox(*b) {
		return nil
	}
	v := [4]float64(*b)
	return &v
}
