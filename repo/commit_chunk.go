package repo

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/geom"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/internal/progress"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/blockcache"
	"github.com/chunkvc/chunkvc/repo/internal/derived"
	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
	"github.com/chunkvc/chunkvc/repo/internal/statcache"
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
	read    int64 // of a dataset: how many chunks were read (the others were known by stat)
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
	if len(ch.parts) > 0 {
		// The next commit or status reads this version: from the cache,
		// not by decoding every shard again.
		g.cacheSplit(ch.blob.Hash, ch.m)
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
func (r *Repo) chunkFile(ctx context.Context, p string, loadOld func() (*manifest.Manifest, error), base version, up *upload, workers int) (*chunked, error) {
	if up == nil {
		up = &upload{progress: progress.Noop{}, dryRun: true}
	}
	j := &chunkJob{r: r, p: p, base: base, up: up, workers: workers}
	defer j.close()
	if err := j.open(); err != nil {
		return nil, err
	}
	j.loadPrevious(loadOld)
	if err := j.plan(ctx); err != nil {
		return nil, err
	}
	if err := j.scan(ctx); err != nil {
		return nil, err
	}
	if err := j.layout(ctx); err != nil {
		return nil, err
	}
	return j.finish()
}

// chunkJob is one chunkFile, a role to a method, in the order chunkFile
// calls them: open stats the file, loadPrevious reads the previous
// version while plan enumerates the file's layout and plans the scan,
// scan reads the file once (scanOptions, storeChunk), layout makes and
// stores the layout blob, and finish makes the manifest (blockEntry,
// build) and starts its writes. close, deferred once, waits for what the
// others started.
type chunkJob struct {
	r       *Repo
	p       string
	base    version
	up      *upload
	workers int

	// open
	f        *os.File
	before   statcache.Stat
	hashedAt int64
	size     int64

	// loadPrevious: set when prevG's Wait returns
	prevG errgroup.Group
	old   *manifest.Manifest
	prev  *blockcache.Set // until the scan is done; then gen is the new entry's
	gen   uint32
	known *manifest.IDIndex // old's chunks (and its layout): not stored again

	// plan
	l       *formats.Layout
	derived map[int64]derived.Hash
	pl      *scanPlan
	chunks  []manifest.Chunk // the plan's: the scan sets their IDs

	// scan
	prefetch  errgroup.Group
	likes     func(i int, off int64) hashing.ID
	prints    []blockcache.Fingerprint // by block, as reuse made them
	reused    atomic.Int64
	quick     []hashing.Quick // by chunk
	quickSeed uint64
	quickHits atomic.Int64
	stop      context.CancelFunc
	uploads   *errgroup.Group
	deltas    errgroup.Group
	deltaSlot *semaphore.Weighted
	added     []bool
	digest    hashing.ID
	cvs       []hashing.CV

	// layout
	byRange map[[2]int64]hashing.ID // for aliases, when there are any
	layLen  int64                   // the layout blob's: only the goroutine storing it holds it
	layID   hashing.ID
	layG    errgroup.Group
}

// close waits for what the job started, on every path out of chunkFile:
// an early return must not leave the layout or a delta writing, nor the
// prefetch or the previous version reading. The order is that of the
// defers it replaces (the reverse of starting), the file closed last.
func (j *chunkJob) close() {
	_ = j.layG.Wait()
	_ = j.deltas.Wait()
	if j.stop != nil {
		j.stop()
	}
	_ = j.prefetch.Wait()
	_ = j.prevG.Wait()
	if j.f != nil {
		j.f.Close()
	}
}

// open opens the file and takes its stat and size.
func (j *chunkJob) open() error {
	f, err := os.Open(j.r.abs(j.p))
	if err != nil {
		return err
	}
	j.f = f
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", j.p)
	}
	j.before = statcache.StatOf(fi)
	j.hashedAt = time.Now().UnixNano()
	j.size = fi.Size()
	return nil
}

// loadPrevious starts reading the previous version: plan waits for it.
func (j *chunkJob) loadPrevious(loadOld func() (*manifest.Manifest, error)) {
	// The previous version (its manifest, and the cached blocks of the
	// version the file last was, else of the committed one) is read while
	// the file's layout is parsed: neither needs the other, and each takes
	// milliseconds for a COG of a few thousand tiles.
	j.prevG.Go(func() error {
		if loadOld != nil {
			var err error
			if j.old, err = loadOld(); err != nil {
				return err
			}
		}
		base, old := j.base, j.old
		if j.size > hashing.BlockLen {
			if base.size > hashing.BlockLen {
				j.prev = j.r.loadBlocks(base.digest, base.size)
			}
			if j.prev == nil && old != nil && old.Size > hashing.BlockLen && old.Digest != base.digest {
				j.prev = j.r.loadBlocks(old.Digest, old.Size)
			}
		}
		if old != nil {
			// Searched, not a map: 12 bytes a chunk, not over 60.
			j.known = manifest.NewIDIndex(old.Chunks)
		}
		return nil
	})
}

// plan enumerates the file's layout, checks its derived segments and plans
// the scan; then waits for the previous version.
func (j *chunkJob) plan(ctx context.Context) error {
	l, err := j.r.formats.Enumerate(ctx, j.f, j.size)
	if err != nil {
		return fmt.Errorf("%s: %w", j.p, err)
	}
	j.l = l
	if j.derived, err = j.r.checkDerived(ctx, l, j.f, j.size); err != nil {
		return fmt.Errorf("%s: %w", j.p, err)
	}
	// The segments, 112 bytes a tile, are not needed after the plan.
	j.pl = planScan(l.Segments, len(l.Aliases))
	j.chunks = j.pl.chunks
	l.Segments = nil
	return j.prevG.Wait()
}

// layout makes the layout blob, inline bytes as read and chunks by id, and
// starts storing it.
func (j *chunkJob) layout(ctx context.Context) error {
	var alias func(i int)
	if len(j.l.Aliases) > 0 {
		j.byRange = map[[2]int64]hashing.ID{}
		alias = func(i int) { j.byRange[[2]int64{j.pl.ranges[i].Off, j.pl.ranges[i].Len}] = j.pl.id(i) }
	}
	blob, err := j.pl.layout(j.size, j.derived, alias)
	if err != nil {
		return fmt.Errorf("%s: %w", j.p, err)
	}
	j.layID, j.layLen = hashing.Sum(blob), int64(len(blob))
	// Stored while the manifest is made: its delta against the previous
	// layout (a few hundred KiB for a COG of a few thousand tiles) costs
	// as much CPU as the rest of chunkFile.
	if !j.up.dryRun {
		j.layG.Go(func() error {
			_ = j.prefetch.Wait() // PrefetchBase returns before the Put it serves
			_, err := j.up.ensure(ctx, j.layID, blob, likeLayout(j.old))
			return err
		})
	}
	return nil
}

// finish makes the file's manifest and its text, starts writing them and
// the block cache's entry, and waits for the deltas and the layout.
func (j *chunkJob) finish() (*chunked, error) {
	// Bytes that changed under us would make chunks and digest disagree.
	fi2, err := j.f.Stat()
	if err != nil {
		return nil, err
	}
	if statcache.StatOf(fi2) != j.before {
		return nil, fmt.Errorf("%s changed while it was being read; try again when it is quiet", j.p)
	}
	for _, a := range j.l.Aliases {
		j.chunks = append(j.chunks, manifest.Chunk{Key: a.Key, Size: a.Len, ID: j.byRange[[2]int64{a.Off, a.Len}], BBox: bbox(a.BBox)})
	}
	bs, recs := j.blockEntry()
	// The plan and the Quicks take about 150 bytes a tile, as much as the
	// manifest's text: they go before it is made, and with them what
	// else only the scan and the block cache's entry needed.
	j.pl, j.quick = nil, nil
	j.derived, j.prints = nil, nil
	ch := &chunked{stat: j.before, hashed: j.hashedAt}
	if !j.up.dryRun {
		j.up.keepAdded(j.chunks, j.added) // in the plan's order, before Normalize sorts them
		j.added = nil
		j.startSave(ch, bs, recs)
	}
	m, err := j.build()
	// The block cache's entry (a large file's records and chaining values
	// take as much as its manifest's text) is written and let go before
	// that text is made.
	_ = ch.put.Wait()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", j.p, err)
	}
	ch.m = m
	if err := ch.encode(j.r.formats.ShardOf(m.Format)); err != nil {
		return nil, fmt.Errorf("%s: %w", j.p, err)
	}
	if !j.up.dryRun {
		j.startNamed(ch)
	}
	if err := j.deltas.Wait(); err != nil {
		_, _ = ch.put.Wait(), ch.named.Wait()
		return nil, fmt.Errorf("%s: %w", j.p, err)
	}
	if err := j.layG.Wait(); err != nil {
		_, _ = ch.put.Wait(), ch.named.Wait()
		return nil, fmt.Errorf("%s: layout: %w", j.p, err)
	}
	return ch, nil
}

// blockEntry is the block cache entry's prints and quick records (nil when
// nothing is stored), from the plan (prints as blockcache.LayoutPrints
// gives them for the layout, which a checkout computes them from). Prints
// and chaining values come from the same read: the entry holds together
// even for a file written while it was read.
func (j *chunkJob) blockEntry() (*blockcache.Set, *blockcache.Records) {
	if j.up.dryRun {
		return nil, nil
	}
	bs := &blockcache.Set{Gen: j.gen, Prints: j.pl.prints(j.size, j.derived, j.prints), CVs: j.cvs}
	var recs *blockcache.Records
	if j.quick != nil {
		recs = blockcache.NewRecords(j.quickSeed, len(j.pl.chunks))
		for i, pt := range j.pl.parts {
			if pt.kind == chunkPart {
				recs.Put(j.quick[pt.at], j.pl.ranges[i].Len, j.chunks[pt.at].ID)
			}
		}
	}
	return bs, recs
}

// build is the file's manifest, of its chunks (sorted) and its layout.
func (j *chunkJob) build() (*manifest.Manifest, error) {
	chunks, err := manifest.Normalize(j.chunks)
	if err != nil {
		return nil, err
	}
	j.chunks = chunks
	l := j.l
	m := &manifest.Manifest{
		Path: j.p, Format: l.Format, FormatVersion: l.Version, Params: manifest.SanitizeValue(l.Params),
		Fallback: manifest.SanitizeValue(l.Fallback), Size: j.size, Digest: j.digest, Layout: j.layID,
		LayoutSize: j.layLen, Chunks: chunks,
	}
	for _, fld := range l.Summary {
		m.Summary = append(m.Summary, manifest.Field{Name: fld.Name, Value: manifest.SanitizeValue(fld.Value)})
	}
	return m, nil
}

// startSave starts writing the block cache's entry bs (with recs), in
// ch.put. The goroutine holds what it needs, not the job.
func (j *chunkJob) startSave(ch *chunked, bs *blockcache.Set, recs *blockcache.Records) {
	r, digest, size := j.r, j.digest, j.size
	replaced := []hashing.ID{j.base.digest}
	if j.old != nil {
		replaced = append(replaced, j.old.Digest)
	}
	// A cache: written while the manifest is sorted (finish waits for it).
	ch.put.Go(func() error {
		if recs != nil {
			bs.SetQuick(recs)
		}
		r.saveBlocks(digest, size, bs, replaced...)
		return nil
	})
}

// startNamed starts writing ch's Git objects, in ch.named. The goroutine
// outlives chunkFile: it holds what it needs, not the job, which holds the
// previous manifest.
func (j *chunkJob) startNamed(ch *chunked) { j.r.startNamed(ch, j.p, j.up.packManifests) }

// startNamed starts writing the Git objects of ch, the manifest of p:
// written (deflated) while the commit goes on, other files and the
// store's batch included, or, when packed, only named for Commit to pack
// with the others. Commit waits for it before the Git commit that refers
// to it; unreachable until then, and git gc prunes it if the commit
// fails.
func (r *Repo) startNamed(ch *chunked, p string, packed bool) {
	ch.named.Go(func() error {
		if err := ch.putBlobs(r.git, packed); err != nil {
			return fmt.Errorf("%s: write git object for its manifest: %w", p, err)
		}
		return nil
	})
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
