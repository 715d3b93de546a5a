package packstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/internal/packidx"
	"github.com/chunkvc/chunkvc/store/internal/packset"
)

// Object is what a listing or a stat reports of a stored object.
type Object struct {
	Key  string
	Size int64
	Mod  time.Time // when it was last written
}

// Backend is the primitive object operations of a service. Each retries
// transient failures itself and holds a connection slot while it talks to
// the service.
type Backend interface {
	// Upload stores size bytes of r under key, replacing any object there.
	Upload(ctx context.Context, key string, r io.ReaderAt, size int64) error
	// ReadAll reads object key whole; one larger than limit is an error.
	ReadAll(ctx context.Context, key string, limit int64) ([]byte, error)
	// OpenRange returns a reader of bytes [off, end) of object key, which
	// holds object id: it resumes after transient failures and returns
	// io.ErrUnexpectedEOF rather than fewer bytes. Its errors name id and
	// key; a missing object's wraps store.ErrNotFound.
	OpenRange(ctx context.Context, id hashing.ID, key string, off, end int64) (io.ReadCloser, error)
	// List calls fn for every object whose key starts with prefix, in
	// key order, on the caller's goroutine; an error from fn is returned
	// as it is.
	List(ctx context.Context, prefix string, fn func(Object) error) error
	// Stat reports object key.
	Stat(ctx context.Context, key string) (Object, error)
	// Delete removes objects; missing ones are not an error.
	Delete(ctx context.Context, keys []string) error
	// IsNotFound reports whether err is the service's answer for a
	// missing object.
	IsNotFound(err error) bool
}

// Loose is the store's own one-object-per-chunk operations.
type Loose struct {
	// Put stores data under id unless an object of its size is there; it
	// reports whether it stored it.
	Put func(ctx context.Context, id hashing.ID, data []byte) (bool, error)
	// Stat is store.Store's Stat of the loose object.
	Stat func(ctx context.Context, id hashing.ID) (store.Info, error)
	// Get is store.Store's Get of the loose object.
	Get func(ctx context.Context, id hashing.ID, off, length int64) (io.ReadCloser, error)
	// List is store.Store's List of the loose objects.
	List func(ctx context.Context, fn func(store.Info) error) error
	// Key is the key of id's loose object.
	Key func(id hashing.ID) string
}

// Config describes a store to New.
type Config struct {
	Backend Backend
	Loose   Loose
	// Prefix is the store's key prefix: "" or ending in "/".
	Prefix string
	// Name is the store, for messages: its URL and endpoint.
	Name string
	// Connections bounds the requests a Packs runs at once.
	Connections int
	// RetryTime bounds the clean-up after a failed batch.
	RetryTime time.Duration
	// PackMax, when set, returns the size at which a batch starts a new
	// pack (default DefaultPackMax); tests shrink it.
	PackMax func() int64
	// Touch, when set, refreshes the age of object key and returns it
	// (TouchObject; a batch touches what it reuses). Without it nothing
	// is touched.
	Touch func(ctx context.Context, key string) (time.Time, error)
}

// packDir is the key segment under the prefix that holds packs and their
// indexes.
const packDir = "packs/"

// maxIndexObject bounds the index objects read into memory.
const maxIndexObject = 256 << 20

// Packs is what a store knows of the packs under its prefix. It is safe
// for concurrent use. A store embeds it, which gives the store Batch,
// DeleteMany, Sweep, StatMany and HasMany; its Put, Stat, Get and List
// are the store's, loose and packed objects alike.
type Packs struct {
	cfg Config
	b   Backend

	// change serialises reloads and changes made by this Packs, so that
	// a reload never drops a pack another goroutine has just added.
	change sync.Mutex

	mu      sync.RWMutex
	started uint64 // number of reloads started
	done    uint64 // number of the last reload that completed; 0: never loaded
	set     packset.Set
	orphans map[string]orphan // pack objects without an index

	deleting sync.Mutex // serialises DeleteMany and Sweep
}

// New returns the packs of the store cfg describes; nothing is read yet.
func New(cfg Config) *Packs {
	cfg.Connections = max(cfg.Connections, 1)
	return &Packs{cfg: cfg, b: cfg.Backend}
}

// orphan is a pack object without an index: one being committed, or
// debris of a batch that crashed.
type orphan struct {
	key  string
	mod  time.Time
	size int64
}

// key returns the key of pack name's object with extension ext.
func (s *Packs) key(name, ext string) string {
	return s.cfg.Prefix + packDir + name + ext
}

// lookup returns where id is packed, as far as s knows without a request,
// and the reload count to pass to reload after a miss.
func (s *Packs) lookup(id hashing.ID) (packset.Ref, uint64, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.set.Lookup(id)
	return r, s.started, ok
}

// Lookup returns where id is packed, as far as s knows without a request.
func (s *Packs) Lookup(id hashing.ID) (packset.Ref, bool) {
	r, _, ok := s.lookup(id)
	return r, ok
}

// Load loads the pack indexes unless that was done already.
func (s *Packs) Load(ctx context.Context) error { return s.load(ctx) }

// Loaded reports whether s has loaded the pack indexes at least once.
func (s *Packs) Loaded() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.done > 0
}

// Has reports whether id is packed, as far as s knows without a request.
func (s *Packs) Has(id hashing.ID) bool {
	_, _, ok := s.lookup(id)
	return ok
}

// load loads the pack indexes unless that was done already.
func (s *Packs) load(ctx context.Context) error {
	return s.reload(ctx, 0)
}

// refresh reads the packs again, for callers that must see every pack
// committed before the call.
func (s *Packs) refresh(ctx context.Context) error {
	s.mu.RLock()
	seen := s.started
	s.mu.RUnlock()
	return s.reload(ctx, seen)
}

// find is lookup; on a miss it loads indexes committed since the lookup
// (unless a reload that started after it has done so already) and looks
// again.
func (s *Packs) find(ctx context.Context, id hashing.ID, seen uint64) (packset.Ref, bool, error) {
	if err := s.reload(ctx, seen); err != nil {
		return packset.Ref{}, false, err
	}
	r, _, ok := s.lookup(id)
	return r, ok, nil
}

// listed is what a listing of packs/ shows of one pack.
type listed struct {
	idxSize  int64
	hasIdx   bool
	packSize int64
	packMod  time.Time
	hasPack  bool
}

// reload lists the packs and loads the indexes it does not know yet,
// forgetting packs whose index is gone, unless a reload started after the
// caller saw seen reloads started has completed. The indexes are fetched
// in parallel.
func (s *Packs) reload(ctx context.Context, seen uint64) error {
	s.change.Lock()
	defer s.change.Unlock()
	s.mu.Lock()
	if s.done > seen {
		s.mu.Unlock()
		return nil
	}
	s.started++
	n := s.started
	s.mu.Unlock()

	found := make(map[string]*listed)
	err := s.b.List(ctx, s.cfg.Prefix+packDir, func(obj Object) error {
		name, ext, ok := splitPackName(strings.TrimPrefix(obj.Key, s.cfg.Prefix+packDir))
		if !ok {
			return nil
		}
		l := found[name]
		if l == nil {
			l = &listed{}
			found[name] = l
		}
		if ext == ".idx" {
			l.hasIdx, l.idxSize = true, obj.Size
		} else {
			l.hasPack, l.packSize, l.packMod = true, obj.Size, obj.Mod
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("list packs of %s: %w", s.cfg.Name, err)
	}

	// Only holders of s.change modify the maps: reading them needs no lock.
	var toRead []string
	orphans := make(map[string]orphan)
	for name, l := range found {
		switch {
		case !l.hasIdx:
			orphans[name] = orphan{s.key(name, ".pack"), l.packMod, l.packSize}
		case s.set.Pack(name) == nil:
			toRead = append(toRead, name)
		}
	}
	slices.Sort(toRead)
	read := make([]*packset.Pack, len(toRead))
	errs := make([]error, len(toRead))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(s.cfg.Connections, len(toRead)) {
		wg.Go(func() {
			for i := range next {
				read[i], errs[i] = s.readIndex(ctx, toRead[i], found[toRead[i]])
			}
		})
	}
	for i := range toRead {
		next <- i
	}
	close(next)
	wg.Wait()
	var added []*packset.Pack
	damaged := make(map[string]error)
	for i, err := range errs {
		var de *damagedError
		switch {
		case err == nil:
			added = append(added, read[i])
		case errors.As(err, &de):
			damaged[toRead[i]] = err
		case s.b.IsNotFound(err):
			// The index went away since the listing (a delete).
		default:
			return fmt.Errorf("load packs of %s: %w", s.cfg.Name, err)
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.set.Update(func(name string) bool {
		l := found[name]
		return l != nil && l.hasIdx
	}, added, damaged)
	// A pack known before may have been touched since (by another
	// process: a commit reusing one of its objects): its age is the
	// listing's, or a gc that loaded the indexes earlier would take the
	// reused objects for old.
	for name, l := range found {
		if p := s.set.Pack(name); p != nil && l.hasPack && l.packMod.After(p.Mod) {
			p.Mod = l.packMod
		}
	}
	s.orphans = orphans
	s.done = n
	return nil
}

// splitPackName splits pack-<64 hex>.pack or .idx.
func splitPackName(key string) (name, ext string, ok bool) {
	for _, ext := range []string{".pack", ".idx"} {
		if name, ok := strings.CutSuffix(key, ext); ok && isPackName(name) {
			return name, ext, true
		}
	}
	return "", "", false
}

// isPackName reports whether name is pack-<64 lower-case hex digits>.
func isPackName(name string) bool {
	h, ok := strings.CutPrefix(name, "pack-")
	if !ok || len(h) != 64 {
		return false
	}
	id, err := hashing.ParseID(h)
	return err == nil && id.String() == h
}

// damagedError is an index that cannot be used: unreadable, failing its
// checksum, or not matching its pack.
type damagedError struct{ err error }

func (e *damagedError) Error() string { return e.err.Error() }
func (e *damagedError) Unwrap() error { return e.err }

// readIndex fetches and checks the index of pack name. A damaged index is
// a *damagedError naming its key.
func (s *Packs) readIndex(ctx context.Context, name string, l *listed) (*packset.Pack, error) {
	key := s.key(name, ".idx")
	damaged := func(format string, args ...any) error {
		return &damagedError{fmt.Errorf("pack index %s of %s: "+format, append([]any{key, s.cfg.Name}, args...)...)}
	}
	if l.idxSize > maxIndexObject {
		return nil, damaged("%d bytes is too large", l.idxSize)
	}
	b, err := s.b.ReadAll(ctx, key, maxIndexObject)
	if err != nil {
		if s.b.IsNotFound(err) {
			return nil, err
		}
		return nil, fmt.Errorf("read pack index %s: %w", key, err)
	}
	ix, err := packidx.Decode(b)
	if err != nil {
		return nil, damaged("%w", err)
	}
	if got := "pack-" + packidx.Checksum(b).String(); got != name {
		return nil, damaged("its checksum names %s", got)
	}
	for _, e := range ix.Entries {
		if e.Encoding != packidx.Raw && e.Encoding != packidx.Zstd {
			return nil, damaged("object %s is stored %s; this store reads raw and zstd objects only", e.ID.Short(), e.Encoding)
		}
	}
	switch {
	case !l.hasPack:
		return nil, damaged("no pack object %s", s.key(name, ".pack"))
	case l.packSize != ix.PackSize:
		return nil, damaged("pack object is %d bytes, the index says %d", l.packSize, ix.PackSize)
	}
	return &packset.Pack{Name: name, Mod: l.packMod, Table: ix.Table()}, nil
}

// publish adds a pack this Packs has just committed.
func (s *Packs) publish(p *packset.Pack) {
	s.change.Lock()
	defer s.change.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.set.Add(p)
	delete(s.orphans, p.Name)
}

// unpublish forgets packs this Packs has just removed.
func (s *Packs) unpublish(ps []*packset.Pack) {
	s.change.Lock()
	defer s.change.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range ps {
		s.set.Remove(p)
	}
}

// damagedIndexes returns an error naming every index that cannot be used,
// or nil.
func (s *Packs) damagedIndexes() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.set.Damaged()
}

// snapshot returns the known packs, sorted by name, each with a mask of
// the entries that are the mapped copy of their object.
func (s *Packs) snapshot() ([]*packset.Pack, [][]bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.set.Snapshot()
}

// DeleteEach deletes keys one request each, up to n at once, for a
// Backend whose service has no bulk delete; the first error is returned.
func DeleteEach(ctx context.Context, keys []string, n int, del func(ctx context.Context, key string) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(n, 1))
	for _, k := range keys {
		g.Go(func() error { return del(gctx, k) })
	}
	return g.Wait()
}
