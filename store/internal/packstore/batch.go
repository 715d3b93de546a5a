package packstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/internal/packidx"
	"github.com/chunkvc/chunkvc/store/internal/packset"
	"github.com/chunkvc/chunkvc/store/internal/zcodec"
)

// Pack limits.
const (
	// DefaultPackMax: a batch starts a new pack once one reaches this size.
	DefaultPackMax = 64 << 20
	// packMaxObject: larger objects are stored loose.
	packMaxObject = 4 << 20
)

// packMax is the size at which a batch starts a new pack.
func (s *Packs) packMax() int64 {
	if s.cfg.PackMax != nil {
		return s.cfg.PackMax()
	}
	return DefaultPackMax
}

// Batch starts a batch that appends objects to temp pack files in
// os.TempDir() and uploads and indexes each pack, in the background, once
// it is full (storePack); Commit does the last one. Objects above 4 MiB
// are stored loose at once. The like hint is not used: packed objects are
// stored raw. See store.Batch for the contract.
func (s *Packs) Batch(ctx context.Context) (store.Batch, error) {
	if err := s.load(ctx); err != nil {
		return nil, fmt.Errorf("start batch in %s: %w", s.cfg.Name, err)
	}
	loose, err := s.looseIDs(ctx, looseListMax)
	if err != nil {
		return nil, fmt.Errorf("start batch in %s: %w", s.cfg.Name, err)
	}
	bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	// Temp packs not yet uploaded, the one being filled included: enough
	// to keep a few uploads running while Puts continue, few enough to
	// bound the temp space when the uploads are slower than the Puts.
	room := min(max(s.cfg.Connections/4+1, 2), 8)
	return &batch{s: s, ctx: bctx, cancel: cancel, room: make(chan struct{}, room),
		loose: loose, ids: make(map[hashing.ID]struct{}), touched: make(map[string]bool)}, nil
}

type batch struct {
	s       *Packs
	ctx     context.Context // of the background uploads
	cancel  context.CancelFunc
	room    chan struct{} // a token per temp pack not yet uploaded
	uploads sync.WaitGroup
	loose   map[hashing.ID]bool // loose objects, when there are few

	mu   sync.Mutex
	done bool
	err  error // of the first failed Put or upload
	ids  map[hashing.ID]struct{}
	// touched are the keys of reused objects and packs touched.
	touched map[string]bool
	cur     *tmpPack    // being filled
	gate    zcodec.Gate // of trial compressions
	all     []*tmpPack  // every pack of the batch
}

// tmpPack is a pack being written to a temp file, then uploaded.
type tmpPack struct {
	f       *os.File // nil once uploaded
	size    int64    // bytes reserved so far
	entries []packidx.Entry
	writes  sync.WaitGroup // Puts between reserving and writing

	unlinked bool // f has no name any more

	// Set by storePack.
	name       string
	idx        []byte
	uploaded   bool // the pack object is stored
	indexTried bool // its index PUT was sent
	mod        time.Time
}

var errFinished = errors.New("batch already committed or aborted")

// looseListMax bounds the loose objects a batch lists when it starts (a
// request per 1000): beyond it, the batch does not know them.
const looseListMax = 10000

var errTooMany = errors.New("too many loose objects")

// looseIDs returns the loose objects if there are at most max of them,
// else nil.
func (s *Packs) looseIDs(ctx context.Context, max int) (map[hashing.ID]bool, error) {
	ids := make(map[hashing.ID]bool)
	err := s.cfg.Loose.List(ctx, func(info store.Info) error {
		if len(ids) >= max {
			ids = nil
			return errTooMany
		}
		ids[info.ID] = true
		return nil
	})
	if err != nil && !errors.Is(err, errTooMany) {
		return nil, err
	}
	return ids, nil
}

// Put appends data to the batch's current pack, zstd-compressed when it
// compresses (zcodec.Compress), unless the store's pack index or the batch
// already has id, or id is a loose object listed when the batch started;
// such a stored object is touched (batch.touch).
// Put makes no request (but for objects above 4 MiB and the first touch
// of each pack or loose object reused):
// in a store with more than looseListMax loose objects, a loose object
// put again is packed again, which is harmless.
func (b *batch) Put(ctx context.Context, id hashing.ID, data []byte, _ hashing.ID) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("put object %s: %w", id.Short(), err)
	}
	if claimed, err := b.claim(id); err != nil || !claimed {
		return false, err
	}
	if r, _, ok := b.s.lookup(id); ok {
		b.touch(ctx, id, b.s.key(r.P.Name, ".pack"), true)
		return false, nil
	}
	if b.loose[id] {
		b.touch(ctx, id, b.s.cfg.Loose.Key(id), false)
		return false, nil
	}
	if len(data) > packMaxObject {
		added, err := b.s.cfg.Loose.Put(ctx, id, data)
		if err != nil {
			return false, b.fail(err)
		}
		return added, nil
	}
	buf := zcodec.Bufs.Get().(*[]byte)
	defer zcodec.Bufs.Put(buf)
	z, err := b.gate.Compress(data, buf)
	if err != nil {
		return false, b.fail(fmt.Errorf("put object %s: %w", id.Short(), err))
	}
	stored, enc := data, packidx.Raw
	if z != nil {
		stored, enc = z, packidx.Zstd
	}
	tp, off, err := b.reserve(ctx, packidx.Entry{ID: id, Stored: int64(len(stored)), Size: int64(len(data)), Encoding: enc})
	if err != nil {
		return false, b.fail(fmt.Errorf("put object %s: %w", id.Short(), err))
	}
	_, err = tp.f.WriteAt(stored, off)
	tp.writes.Done()
	if err != nil {
		return false, b.fail(fmt.Errorf("put object %s: %w", id.Short(), err))
	}
	return true, nil
}

// touch refreshes the age of object key, which holds id and which the
// batch reuses, once per batch (a pack once for all its objects), so that
// a gc elsewhere spares it while the commit is in flight (store.Batch).
// It is best effort: the age is a hint to gc.
func (b *batch) touch(ctx context.Context, id hashing.ID, key string, packed bool) {
	if b.s.cfg.Touch == nil {
		return
	}
	b.mu.Lock()
	done := b.touched[key]
	b.touched[key] = true
	b.mu.Unlock()
	if done {
		return
	}
	mod, err := b.s.cfg.Touch(ctx, key)
	if err == nil && packed {
		b.s.Touched(id, mod)
	}
}

// claim records id as put by this batch; it reports false if it was already.
func (b *batch) claim(id hashing.ID) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.done:
		return false, fmt.Errorf("put object %s: %w", id.Short(), errFinished)
	case b.err != nil:
		return false, fmt.Errorf("put object %s: batch failed: %w", id.Short(), b.err)
	}
	if _, ok := b.ids[id]; ok {
		return false, nil
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

// reserve places entry e (e.Stored bytes; its Offset is set here) in the
// current pack, starting a new pack when it is full (which waits while too
// many packs are still to be uploaded). It returns where to write the
// bytes; the caller calls tp.writes.Done once they are written.
func (b *batch) reserve(ctx context.Context, e packidx.Entry) (*tmpPack, int64, error) {
	n, packMax := e.Stored, b.s.packMax()
	for {
		b.mu.Lock()
		if b.done {
			b.mu.Unlock()
			return nil, 0, errFinished
		}
		if tp := b.cur; tp != nil {
			if tp.size == packidx.PackHeaderSize || tp.size+n <= packMax {
				off := tp.size
				tp.size += n
				e.Offset = off
				tp.entries = append(tp.entries, e)
				tp.writes.Add(1)
				if tp.size >= packMax {
					b.seal(tp)
				}
				b.mu.Unlock()
				return tp, off, nil
			}
			b.seal(tp)
		}
		b.mu.Unlock()

		select {
		case b.room <- struct{}{}:
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		case <-b.ctx.Done():
			return nil, 0, b.ctx.Err()
		}
		tp, err := newTmpPack()
		if err != nil {
			<-b.room
			return nil, 0, err
		}
		b.mu.Lock()
		if b.cur == nil && !b.done {
			b.cur = tp
			b.all = append(b.all, tp)
			tp = nil
		}
		b.mu.Unlock()
		if tp != nil { // another Put started a pack meanwhile
			tp.discard()
			<-b.room
		}
	}
}

// seal stops filling tp and uploads it in the background once its Puts
// have written their bytes. The caller holds b.mu.
func (b *batch) seal(tp *tmpPack) {
	if b.cur == tp {
		b.cur = nil
	}
	b.uploads.Go(func() {
		defer func() { <-b.room }()
		tp.writes.Wait()
		if err := b.s.storePack(b.ctx, tp); err != nil {
			_ = b.fail(err)
		}
	})
}

// storePack uploads tp, checks that the pack object is stored whole, then
// stores its index: a pack's objects are readable, in every process, as
// soon as that pack is done, not when the batch commits. A batch killed
// midway thus leaves packs that are ordinary objects — found by a retried
// commit, which uploads them no more, and collected by gc once nothing
// references them and they are older than its grace period — and at most
// the packs in flight as debris (Sweep). Once its index is stored, a pack
// is never removed by the batch: another process may already rely on it.
func (s *Packs) storePack(ctx context.Context, tp *tmpPack) error {
	if err := s.uploadPack(ctx, tp); err != nil {
		return err
	}
	if err := s.packExists(ctx, tp); err != nil {
		return err
	}
	tp.indexTried = true
	if err := s.putBytes(ctx, s.key(tp.name, ".idx"), tp.idx); err != nil {
		return err
	}
	s.publish(&packset.Pack{Name: tp.name, Mod: tp.mod, Table: packidx.Index{PackSize: tp.size, Entries: tp.entries}.Table()})
	return nil
}

// finish ends the batch: the pack being filled is sealed (or, without
// seal, dropped), and finish waits for the uploads. It returns every pack
// of the batch and the batch's first error.
func (b *batch) finish(seal bool) ([]*tmpPack, error) {
	b.mu.Lock()
	if b.done {
		b.mu.Unlock()
		return nil, errFinished
	}
	b.done = true
	if tp := b.cur; tp != nil {
		if seal && len(tp.entries) > 0 {
			b.seal(tp)
		} else {
			b.cur = nil
			tp.writes.Wait() // nothing reserved: returns at once
			tp.discard()
			<-b.room
		}
	}
	b.mu.Unlock()
	b.uploads.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.all, b.err
}

// Commit uploads and indexes the packs not yet done (the one being filled),
// waits for those in flight, and checks that the packs done before it was
// called are still stored (a gc elsewhere may have taken them for garbage
// meanwhile, if they were older than its grace period). On failure the
// pack objects without an index are removed.
func (b *batch) Commit(ctx context.Context) error {
	defer b.cancel()
	stop := context.AfterFunc(ctx, b.cancel)
	defer stop()
	start := time.Now()
	packs, err := b.finish(true)
	if errors.Is(err, errFinished) {
		return fmt.Errorf("commit batch to %s: %w", b.s.cfg.Name, err)
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		_ = b.cleanup(packs) // best effort: Sweep removes what stays
		return fmt.Errorf("commit batch to %s: %w", b.s.cfg.Name, err)
	}
	errs := make([]error, len(packs))
	var wg sync.WaitGroup
	for i, tp := range packs {
		if tp.mod.Before(start) {
			wg.Go(func() { errs[i] = b.s.packExists(ctx, tp) })
		}
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("commit batch to %s: %w", b.s.cfg.Name, err)
	}
	return nil
}

// packExists checks that tp's pack object is stored, at its full size.
func (s *Packs) packExists(ctx context.Context, tp *tmpPack) error {
	key := s.key(tp.name, ".pack")
	obj, err := s.b.Stat(ctx, key)
	if err != nil {
		return fmt.Errorf("pack %s: %w", key, err)
	}
	if obj.Size != tp.size {
		return fmt.Errorf("pack %s: %w: %d bytes stored, %d written", key, store.ErrCorrupt, obj.Size, tp.size)
	}
	return nil
}

// Abort cancels the uploads in flight and removes the batch's temp files
// and the pack objects it uploaded that have no index (one whose cancelled
// upload the server completes after that is debris for Sweep); packs
// already indexed stay (see storePack).
func (b *batch) Abort() error {
	b.cancel()
	packs, err := b.finish(false)
	if errors.Is(err, errFinished) {
		return fmt.Errorf("abort batch to %s: %w", b.s.cfg.Name, err)
	}
	if err := b.cleanup(packs); err != nil {
		return fmt.Errorf("abort batch to %s: %w", b.s.cfg.Name, err)
	}
	return nil
}

// cleanup removes the temp files of packs and, best effort, the pack
// objects whose upload was started but whose index was not tried (an
// upload cancelled as it ended may have stored the object). A pack whose
// index PUT failed stays: the server may have stored the index all the
// same, and another process may already rely on it; without one it is
// debris that Sweep removes later.
func (b *batch) cleanup(packs []*tmpPack) error {
	var keys []string
	for _, tp := range packs {
		tp.discard()
		if tp.name != "" && !tp.indexTried {
			keys = append(keys, b.s.key(tp.name, ".pack"))
		}
	}
	if len(keys) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(b.ctx), b.s.cfg.RetryTime)
	defer cancel()
	return b.s.b.Delete(ctx, keys)
}

// newTmpPack creates a temp pack file in os.TempDir() and writes its
// header. The file is unlinked at once where the system allows it (it is
// used through its descriptor only), so that a process killed while it
// writes or uploads the pack leaves nothing behind.
func newTmpPack() (*tmpPack, error) {
	f, err := os.CreateTemp("", "chunkvc-pack-*.tmp")
	if err != nil {
		return nil, err
	}
	if _, err := f.WriteAt([]byte(packidx.PackHeader), 0); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	tp := &tmpPack{f: f, size: packidx.PackHeaderSize}
	tp.unlinked = os.Remove(f.Name()) == nil
	return tp, nil
}

// discard closes and removes tp's temp file, if it has one.
func (tp *tmpPack) discard() {
	if tp.f != nil {
		tp.f.Close()
		if !tp.unlinked {
			os.Remove(tp.f.Name())
		}
		tp.f = nil
	}
}

// uploadPack encodes tp's index, which names the pack, and stores the pack
// object (not the index). The temp file is removed once it is stored.
func (s *Packs) uploadPack(ctx context.Context, tp *tmpPack) error {
	idx, err := packidx.Encode(packidx.Index{PackSize: tp.size, Entries: tp.entries})
	if err != nil {
		return err
	}
	tp.name, tp.idx = "pack-"+packidx.Checksum(idx).String(), idx
	key := s.key(tp.name, ".pack")
	if err := s.b.Upload(ctx, key, tp.f, tp.size); err != nil {
		return fmt.Errorf("put pack %s in %s: %w", key, s.cfg.Name, err)
	}
	tp.uploaded, tp.mod = true, time.Now()
	tp.discard()
	return nil
}

// putBytes stores a small object under key.
func (s *Packs) putBytes(ctx context.Context, key string, b []byte) error {
	if err := s.b.Upload(ctx, key, bytes.NewReader(b), int64(len(b))); err != nil {
		return fmt.Errorf("put %s in %s: %w", key, s.cfg.Name, err)
	}
	return nil
}
