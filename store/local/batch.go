package local

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/internal/writeback"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/internal/packidx"
	"github.com/chunkvc/chunkvc/store/internal/packset"
	"github.com/chunkvc/chunkvc/store/internal/zcodec"
)

// Pack limits; variables so that tests can shrink them.
var (
	// packMax: a batch starts a new pack file once one reaches this size.
	packMax int64 = 512 << 20
	// packMaxObject: larger objects are stored loose.
	packMaxObject = 16 << 20
)

const (
	// maxDepth bounds delta chains: an object whose base is this deep
	// is stored whole.
	maxDepth = 10
	// minDelta: smaller objects are not stored as deltas.
	minDelta = 256
)

// Batch starts a batch that writes objects into new pack files under
// <root>/tmp/ and publishes them in <root>/packs/: each full one (packMax)
// at once, the last on Commit. See store.Batch for the contract.
func (s *Store) Batch(ctx context.Context) (store.Batch, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("start batch in %s: %w", s.root, err)
	}
	// Catch up with the packs folder once, here, in the background (the
	// caller has files to open and parse before its first Put): Puts then
	// look ids up in memory, not with a stat of the folder per new object.
	// A pack another process publishes meanwhile can make an object be
	// packed twice, which wastes its bytes and nothing else.
	// Which fan-out folders exist is read then too: a packed store has
	// few loose objects or none, and an id whose folder is missing needs
	// no stat (another process may add one meanwhile: the object is then
	// stored twice, no worse than the pack case).
	b := &batch{s: s, ids: make(map[hashing.ID]struct{}), placed: make(map[uint64]uint64), dirs: make(map[string]bool), loaded: make(chan struct{})}
	go func() {
		defer close(b.loaded)
		if _, err := s.refresh(false); err != nil {
			b.loadErr = fmt.Errorf("start batch in %s: %w", s.root, err)
			return
		}
		b.fanout, b.loadErr = s.looseFolders()
	}()
	return b, nil
}

type batch struct {
	s *Store

	loaded  chan struct{} // closed when the packs folder has been read
	loadErr error         // why it could not be; set before loaded closes
	fanout  *[256]bool    // which fan-out folders of loose objects exist; set before loaded closes

	gate zcodec.Gate // of trial compressions

	mu   sync.Mutex
	done bool
	err  error // of the first failed Put
	// ids holds the objects being put, those found stored and those
	// stored loose: few. An object in a pack is found through placed
	// instead, by the first 8 bytes of its ID, as where its entry is in
	// packs (pack<<32 | entry): 16 bytes where a map of IDs takes 32, and
	// a commit of a file of 500,000 tiles holds one per tile. An object
	// whose 8 bytes another placed one has stays in ids.
	ids    map[hashing.ID]struct{}
	placed map[uint64]uint64
	dirs   map[string]bool // fan-out folders of loose objects found present
	// bases holds the delta bases read by PrefetchBase, until a Put uses
	// them: at most maxBases.
	bases map[hashing.ID][]byte

	// packMu, held while an object's bytes are copied into the current
	// pack, is apart from mu so that claims do not wait for copies.
	packMu sync.Mutex
	closed bool // set under packMu when the batch is done
	cur    *tmpPack
	packs  []*tmpPack
	// pubs: the full packs being published in the background.
	pubs sync.WaitGroup
}

// tmpPack is a pack file being written.
type tmpPack struct {
	f       *os.File
	size    int64 // bytes written or staged so far
	entries packidx.List
	st      *stager // of a batch's pack; nil when written with add
	// published: a batch's full pack is in packs/ with its index (set
	// by the goroutine that published it, read after the batch waited
	// for it).
	published bool
	// pub is the published pack, set with entries emptied under the
	// batch's packMu: its index, which the Store holds anyway, answers
	// for the objects then (a pack of 350,000 tiles' entries is 20 MB).
	pub *packset.Pack
}

// Put stores data in the batch's pack unless the store holds id already.
// Objects above 16 MiB are stored loose at once. When like names an object
// the store holds, data is stored as a delta against it if that is
// smaller than storing it whole, the delta chain stays within maxDepth and
// both are at most 16 MiB; an object put earlier in the same batch is not
// used as a base.
func (b *batch) Put(ctx context.Context, id hashing.ID, data []byte, like hashing.ID) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("put object %s: %w", id.Short(), err)
	}
	<-b.loaded
	if b.loadErr != nil {
		return false, b.fail(b.loadErr)
	}
	if claimed, err := b.claim(id); err != nil || !claimed {
		return false, err
	}
	held, loose, err := b.s.holds(id, len(data), b.fanout)
	if err != nil {
		return false, b.fail(fmt.Errorf("put object %s: %w", id.Short(), err))
	}
	if held {
		if loose != "" {
			// A concurrent Put may not have synced its folder yet.
			b.mu.Lock()
			if b.dirs != nil {
				b.dirs[filepath.Dir(loose)] = true
			}
			b.mu.Unlock()
		}
		_ = b.s.Touch(ctx, id) // best effort, as the age is a hint to gc
		return false, nil
	}
	if len(data) > packMaxObject {
		if err := b.s.Put(ctx, id, data); err != nil {
			return false, b.fail(err)
		}
		return true, nil
	}
	var base []byte
	if !like.IsZero() {
		base = b.takeBase(like)
	}
	obj, err := b.s.encodeWith(ctx, id, data, like, base, true, &b.gate)
	if err != nil {
		return false, b.fail(fmt.Errorf("put object %s: %w", id.Short(), err))
	}
	defer obj.release()
	ref, err := b.place(obj.entry(id, len(data)), obj.stored)
	if err != nil {
		return false, b.fail(fmt.Errorf("put object %s: %w", id.Short(), err))
	}
	b.mu.Lock()
	if _, taken := b.placed[prefix(id)]; !taken && b.placed != nil {
		b.placed[prefix(id)] = ref
		delete(b.ids, id)
	}
	b.mu.Unlock()
	return true, nil
}

// maxBases and maxBaseSize bound the bases a batch holds for Puts to come:
// a commit prefetches one per file it works on (the previous layout of the
// file, whose chain of deltas is read from disk), where the read is worth
// a file's time; a larger base stays out of the scan's peak of memory.
const (
	maxBases    = 4
	maxBaseSize = 4 << 20
)

// PrefetchBase reads object id, whole, for the Put that names it as like
// (store.BasePrefetcher).
func (b *batch) PrefetchBase(ctx context.Context, id hashing.ID) {
	b.mu.Lock()
	full := b.done || len(b.bases) >= maxBases
	b.mu.Unlock()
	if full || id.IsZero() {
		return
	}
	if depth, size, ok := b.s.baseInfo(id); !ok || depth >= maxDepth || size < minDelta || size > maxBaseSize {
		return // not a base encode would use, or too small to be worth a read ahead
	}
	raw, err := b.s.raw(ctx, id, maxChain)
	if err != nil || hashing.Sum(raw) != id {
		return // Put reads it again, and then only costs the delta
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.done && len(b.bases) < maxBases {
		if b.bases == nil {
			b.bases = map[hashing.ID][]byte{}
		}
		b.bases[id] = raw
	}
}

// takeBase returns, and forgets, the base PrefetchBase read as id; nil if
// there is none.
func (b *batch) takeBase(id hashing.ID) []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	raw := b.bases[id]
	delete(b.bases, id)
	return raw
}

// prefix is the first 8 bytes of id, by which placed finds it.
func prefix(id hashing.ID) uint64 { return binary.LittleEndian.Uint64(id[:8]) }

// claim records id as put by this batch; it reports false if it was already.
func (b *batch) claim(id hashing.ID) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return false, fmt.Errorf("put object %s: %w", id.Short(), errFinished)
	}
	if _, ok := b.ids[id]; ok {
		return false, nil
	}
	if ref, ok := b.placed[prefix(id)]; ok {
		b.packMu.Lock() // the packs' entries grow under it
		var held bool
		if tp := b.packs[ref>>32]; tp.pub != nil {
			_, held = tp.pub.Search(id)
		} else {
			held = tp.entries.ID(int(uint32(ref))) == id
		}
		b.packMu.Unlock()
		if held {
			return false, nil
		}
	}
	b.ids[id] = struct{}{}
	return true, nil
}

// fail records the batch's first error, which Commit returns, and returns err.
func (b *batch) fail(err error) error {
	b.mu.Lock()
	if b.err == nil {
		b.err = err
	}
	b.mu.Unlock()
	return err
}

// place appends e with its stored bytes to the current pack, starting a new
// one if that is full, and returns where its entry is (pack<<32 | entry).
// Space is reserved under the lock and the bytes are copied into the
// pack's segment after it is released, unless they cross into the next
// segment.
func (b *batch) place(e packidx.Entry, stored []byte) (uint64, error) {
	tp, ref, sp, ok, err := b.reserve(e, stored)
	if ok {
		tp.st.fill(sp, stored)
	}
	return ref, err
}

// reserve places e in the current pack and either reserves the space for
// stored (ok true: the caller copies it) or copies it there at once.
func (b *batch) reserve(e packidx.Entry, stored []byte) (tp *tmpPack, ref uint64, sp span, ok bool, err error) {
	b.packMu.Lock()
	defer b.packMu.Unlock()
	if b.closed {
		return nil, 0, span{}, false, errFinished
	}
	tp = b.cur
	if tp == nil || tp.size > packidx.PackHeaderSize && tp.size+e.Stored > packMax {
		if tp != nil {
			// The full pack's last bytes go out now and its buffers are
			// freed: memory stays at one pack's segments, however
			// large the batch. It is published at once, in the
			// background: a commit killed later leaves its objects for
			// a retry to find rather than to write again.
			err := tp.st.finish()
			tp.st.release()
			if err != nil {
				b.cur = nil // the batch has failed; nothing more goes into this pack
				return nil, 0, span{}, false, err
			}
			full := tp
			b.pubs.Go(func() {
				p, err := b.s.publish(full, time.Time{}, true)
				if err != nil {
					_ = b.fail(fmt.Errorf("publish a full pack: %w", err))
					return
				}
				full.published = true
				b.packMu.Lock()
				full.pub, full.entries = p, packidx.List{}
				b.packMu.Unlock()
			})
		}
		if tp, err = b.s.newTmpPack(true); err != nil {
			return nil, 0, span{}, false, err
		}
		b.cur = tp
		b.packs = append(b.packs, tp)
	}
	if sp, ok, err = tp.st.reserve(len(stored)); err == nil && !ok {
		err = tp.st.append(stored)
	}
	if err != nil {
		return nil, 0, span{}, false, err
	}
	e.Offset = tp.size
	if err := tp.entries.Append(e); err != nil {
		return nil, 0, span{}, false, err
	}
	tp.size += e.Stored
	return tp, uint64(len(b.packs)-1)<<32 | uint64(tp.entries.Len()-1), sp, ok, nil
}

// Commit publishes the batch's packs not yet published (full ones are as
// soon as they are full): each is synced and renamed into packs/, then its
// index is written beside it. On failure the packs not yet published are
// removed.
func (b *batch) Commit(ctx context.Context) error {
	<-b.loaded
	packs, err := b.finish()
	b.pubs.Wait()
	if err == nil {
		err = b.failed()
	}
	if err == nil {
		err = ctx.Err()
	}
	b.mu.Lock()
	dirs := b.dirs
	// Nothing is put any more: the claims (an entry per object) go before
	// the packs' indexes are made.
	b.dirs, b.ids, b.placed, b.bases = nil, nil, nil, nil
	b.mu.Unlock()
	for dir := range dirs {
		if err != nil {
			break
		}
		err = writeback.SyncDir(dir)
	}
	for i, tp := range packs {
		if tp.published {
			tp.entries = packidx.List{}
			continue
		}
		if err != nil {
			_ = discard(packs[i:])
			break
		}
		if tp.entries.Len() == 0 {
			_ = discard(packs[i : i+1]) // empty; if it stays, Sweep removes it
			continue
		}
		err = tp.st.finish()
		tp.st.release()
		if err != nil {
			_ = discard(packs[i:])
			break
		}
		_, err = b.s.publish(tp, time.Time{}, false)
	}
	if err != nil {
		return fmt.Errorf("commit batch in %s: %w", b.s.root, err)
	}
	return nil
}

// failed returns the batch's first error, wrapped as finish wraps it.
func (b *batch) failed() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return fmt.Errorf("a put failed: %w", b.err)
	}
	return nil
}

// Abort removes the batch's temp files. Packs it published already stay:
// another writer may rely on their objects.
func (b *batch) Abort() error {
	<-b.loaded
	packs, err := b.finish()
	b.pubs.Wait()
	if errors.Is(err, errFinished) {
		return fmt.Errorf("abort batch in %s: %w", b.s.root, err)
	}
	if err := discard(packs); err != nil {
		return fmt.Errorf("abort batch in %s: %w", b.s.root, err)
	}
	return nil
}

var errFinished = errors.New("batch already committed or aborted")

// finish ends the batch and returns its packs and the error of a failed
// Put.
func (b *batch) finish() ([]*tmpPack, error) {
	b.mu.Lock()
	if b.done {
		b.mu.Unlock()
		return nil, errFinished
	}
	defer b.mu.Unlock()
	b.done = true
	b.packMu.Lock() // after a copy in progress
	b.closed = true
	packs := b.packs
	b.packMu.Unlock()
	if b.err != nil {
		return packs, fmt.Errorf("a put failed: %w", b.err)
	}
	return packs, nil
}

// looseFolders reports which of the 256 fan-out folders of loose objects
// exist.
func (s *Store) looseFolders() (*[256]bool, error) {
	ents, err := os.ReadDir(s.root)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", s.root, err)
	}
	var out [256]bool
	for _, e := range ents {
		if b, err := hex.DecodeString(e.Name()); err == nil && len(b) == 1 && e.Name() == hex.EncodeToString(b) {
			out[b[0]] = true
		}
	}
	return &out, nil
}

// holds reports whether the store holds id (of size bytes) already, with
// the path of its file if it is loose: packs as of the batch's start (or
// later loads), then one stat for a loose file unless fanout (when not
// nil) says its folder does not exist.
func (s *Store) holds(id hashing.ID, size int, fanout *[256]bool) (held bool, loose string, err error) {
	if _, ok := s.packed(id); ok {
		return true, "", nil
	}
	if fanout != nil && !fanout[id[0]] {
		return false, "", nil
	}
	p := s.path(id)
	fi, err := os.Lstat(p)
	switch {
	case err == nil && fi.Mode().IsRegular() && fi.Size() == int64(size):
		return true, p, nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return false, "", err
	}
	return false, "", nil
}

// baseInfo returns the delta depth and size of object id, if the store
// holds it.
func (s *Store) baseInfo(id hashing.ID) (depth int, size int64, ok bool) {
	if r, ok := s.packed(id); ok {
		return int(r.Entry().Depth), r.Entry().Size, true
	}
	if fi, err := os.Stat(s.path(id)); err == nil && fi.Mode().IsRegular() {
		return 0, fi.Size(), true
	}
	if r, ok, err := s.findPacked(id); err == nil && ok {
		return int(r.Entry().Depth), r.Entry().Size, true
	}
	return 0, 0, false
}

// encoded is an object ready to be written into a pack.
type encoded struct {
	stored []byte
	enc    packidx.Encoding
	depth  uint8
	base   hashing.ID
	buf    *[]byte // from bufs, or nil
}

func (o *encoded) entry(id hashing.ID, size int) packidx.Entry {
	return packidx.Entry{ID: id, Stored: int64(len(o.stored)), Size: int64(size),
		Encoding: o.enc, Depth: o.depth, Base: o.base}
}

func (o *encoded) release() {
	if o.buf != nil && cap(*o.buf) <= 4<<20 {
		*o.buf = (*o.buf)[:0]
		zcodec.Bufs.Put(o.buf)
	}
	o.buf = nil
}

// encode chooses how to store data: raw, compressed, or as a delta
// against like — whichever is smallest. With touch, a base it uses is
// touched, so that a garbage collection's grace period spares it while the
// delta is not yet committed.
func (s *Store) encode(ctx context.Context, id hashing.ID, data []byte, like hashing.ID, touch bool, g *zcodec.Gate) (encoded, error) {
	return s.encodeWith(ctx, id, data, like, nil, touch, g)
}

// encodeWith is encode with like's bytes, when base is not nil (the
// caller checked them against like), instead of reading them.
func (s *Store) encodeWith(ctx context.Context, id hashing.ID, data []byte, like hashing.ID, base []byte, touch bool, g *zcodec.Gate) (encoded, error) {
	buf := zcodec.Bufs.Get().(*[]byte)
	o := encoded{stored: data, enc: packidx.Raw, buf: buf}
	z, err := g.Compress(data, buf)
	if err != nil {
		o.release()
		return encoded{}, err
	}
	limit := len(data) - len(data)/zcodec.MinSaving
	if z != nil {
		o.stored, o.enc, limit = z, packidx.Zstd, len(z)
	}
	if like.IsZero() || like == id || len(data) < minDelta || len(data) > packMaxObject {
		return o, nil
	}
	depth, size, ok := s.baseInfo(like)
	if !ok || depth >= maxDepth || size == 0 || size > int64(packMaxObject) {
		return o, nil
	}
	if base == nil {
		if base, err = s.raw(ctx, like, maxChain); err != nil || hashing.Sum(base) != like {
			return o, nil // like is a hint: an unreadable base only costs the delta
		}
	}
	d, err := zcodec.EncodeDelta(data, base, limit)
	if err != nil {
		o.release()
		return encoded{}, err
	}
	if d != nil {
		o.stored, o.enc, o.depth, o.base = d, packidx.Delta, uint8(depth+1), like
		if touch {
			_ = s.Touch(ctx, like) // best effort: the delta is fine either way
		}
	}
	return o, nil
}
