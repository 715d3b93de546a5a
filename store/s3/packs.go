package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store/internal/packidx"
	"github.com/chunkvc/chunkvc/store/internal/packset"
	"github.com/chunkvc/chunkvc/store/internal/retry"
)

// packDir is the key segment under the prefix that holds packs and their
// indexes.
const packDir = "packs/"

// maxIndexObject bounds the index objects read into memory.
const maxIndexObject = 256 << 20

// packSet is what a Store knows of the packs under its prefix.
type packSet struct {
	// change serialises reloads and changes made by this Store, so that a
	// reload never drops a pack another goroutine has just added.
	change sync.Mutex

	mu      sync.RWMutex
	started uint64 // number of reloads started
	done    uint64 // number of the last reload that completed; 0: never loaded
	set     packset.Set
	orphans map[string]orphan // pack objects without an index
}

// orphan is a pack object without an index: one being committed, or
// debris of a batch that crashed.
type orphan struct {
	key  string
	mod  time.Time
	size int64
}

// packKey returns the key of pack name's object with extension ext.
func (s *Store) packKey(name, ext string) string {
	return s.prefix + packDir + name + ext
}

// packed returns where id is packed, as far as the Store knows without a
// request, and the reload count to pass to reload after a miss.
func (s *Store) packed(id hashing.ID) (packset.Ref, uint64, bool) {
	s.ps.mu.RLock()
	defer s.ps.mu.RUnlock()
	r, ok := s.ps.set.Lookup(id)
	return r, s.ps.started, ok
}

// loadPacks loads the pack indexes unless that was done already.
func (s *Store) loadPacks(ctx context.Context) error {
	return s.reload(ctx, 0)
}

// refreshPacks reads the packs again, for callers that must see every
// pack committed before the call.
func (s *Store) refreshPacks(ctx context.Context) error {
	s.ps.mu.RLock()
	seen := s.ps.started
	s.ps.mu.RUnlock()
	return s.reload(ctx, seen)
}

// findPacked is packed; on a miss it loads indexes committed since the
// lookup (unless a reload that started after it has done so already) and
// looks again.
func (s *Store) findPacked(ctx context.Context, id hashing.ID, seen uint64) (packset.Ref, bool, error) {
	if err := s.reload(ctx, seen); err != nil {
		return packset.Ref{}, false, err
	}
	r, _, ok := s.packed(id)
	return r, ok, nil
}

// reload lists the packs and loads the indexes it does not know yet,
// forgetting packs whose index is gone, unless a reload started after the
// caller saw seen reloads started has completed. The indexes are fetched
// in parallel.
func (s *Store) reload(ctx context.Context, seen uint64) error {
	s.ps.change.Lock()
	defer s.ps.change.Unlock()
	s.ps.mu.Lock()
	if s.ps.done > seen {
		s.ps.mu.Unlock()
		return nil
	}
	s.ps.started++
	n := s.ps.started
	s.ps.mu.Unlock()

	type listed struct {
		idxSize  int64
		hasIdx   bool
		packSize int64
		packMod  time.Time
		hasPack  bool
	}
	found := make(map[string]*listed)
	err := s.listKeys(ctx, s.prefix+packDir, func(obj minio.ObjectInfo) error {
		rest := strings.TrimPrefix(obj.Key, s.prefix+packDir)
		name, ext, ok := splitPackName(rest)
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
			l.hasPack, l.packSize, l.packMod = true, obj.Size, obj.LastModified
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("list packs of s3 store %s at %s: %w", s.url, s.endpoint, err)
	}

	// Only holders of s.ps.change modify the maps: reading them needs no lock.
	var toRead []string
	orphans := make(map[string]orphan)
	for name, l := range found {
		switch {
		case !l.hasIdx:
			orphans[name] = orphan{s.packKey(name, ".pack"), l.packMod, l.packSize}
		case s.ps.set.Pack(name) == nil:
			toRead = append(toRead, name)
		}
	}
	slices.Sort(toRead)
	read := make([]*packset.Pack, len(toRead))
	errs := make([]error, len(toRead))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(s.opt.Connections, len(toRead)) {
		wg.Go(func() {
			for i := range next {
				l := found[toRead[i]]
				read[i], errs[i] = s.readIndex(ctx, toRead[i], l.idxSize, l.hasPack, l.packSize, l.packMod)
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
		case isNotFound(err):
			// The index went away since the listing (a delete).
		default:
			return fmt.Errorf("load packs of s3 store %s at %s: %w", s.url, s.endpoint, err)
		}
	}

	s.ps.mu.Lock()
	defer s.ps.mu.Unlock()
	s.ps.set.Update(func(name string) bool {
		l := found[name]
		return l != nil && l.hasIdx
	}, added, damaged)
	s.ps.orphans = orphans
	s.ps.done = n
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
func (s *Store) readIndex(ctx context.Context, name string, size int64, hasPack bool, packSize int64, mod time.Time) (*packset.Pack, error) {
	key := s.packKey(name, ".idx")
	damaged := func(format string, args ...any) error {
		return &damagedError{fmt.Errorf("pack index %s/%s: "+format, append([]any{s.bucket, key}, args...)...)}
	}
	if size > maxIndexObject {
		return nil, damaged("%d bytes is too large", size)
	}
	b, err := s.getAll(ctx, key, maxIndexObject)
	if err != nil {
		if isNotFound(err) {
			return nil, err
		}
		return nil, fmt.Errorf("read pack index %s/%s: %w", s.bucket, key, err)
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
	case !hasPack:
		return nil, damaged("no pack object %s", s.packKey(name, ".pack"))
	case packSize != ix.PackSize:
		return nil, damaged("pack object is %d bytes, the index says %d", packSize, ix.PackSize)
	}
	return &packset.Pack{Name: name, Mod: mod, Table: ix.Table()}, nil
}

// getAll reads a whole object of at most limit bytes, with retries.
func (s *Store) getAll(ctx context.Context, key string, limit int64) ([]byte, error) {
	var b []byte
	err := s.pol.Do(ctx, func(ctx context.Context) error {
		obj, _, _, err := minio.Core{Client: s.client}.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
		if err != nil {
			return err
		}
		defer obj.Close()
		var buf bytes.Buffer
		n, err := buf.ReadFrom(io.LimitReader(obj, limit+1))
		if err != nil {
			return err
		}
		if n > limit {
			return fmt.Errorf("larger than %d bytes", limit)
		}
		b = buf.Bytes()
		return nil
	})
	return b, err
}

// listKeys calls fn for every key under prefix, resuming after the last
// key seen on transient failures.
func (s *Store) listKeys(ctx context.Context, prefix string, fn func(minio.ObjectInfo) error) error {
	after := ""
	var fnErr error
	err := s.pol.Attempts(ctx, retry.NoSlot, func(ctx context.Context) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		for obj := range s.client.ListObjectsIter(ctx, s.bucket, minio.ListObjectsOptions{
			Prefix: prefix, Recursive: true, StartAfter: after,
		}) {
			if obj.Err != nil {
				return obj.Err
			}
			after = obj.Key
			if err := fn(obj); err != nil {
				fnErr = err
				return nil
			}
		}
		return nil
	})
	if fnErr != nil {
		return fnErr
	}
	return err
}

// publishPack adds a pack this Store has just committed.
func (s *Store) publishPack(p *packset.Pack) {
	s.ps.change.Lock()
	defer s.ps.change.Unlock()
	s.ps.mu.Lock()
	defer s.ps.mu.Unlock()
	s.ps.set.Add(p)
	delete(s.ps.orphans, p.Name)
}

// unpublishPacks forgets packs this Store has just removed.
func (s *Store) unpublishPacks(ps []*packset.Pack) {
	s.ps.change.Lock()
	defer s.ps.change.Unlock()
	s.ps.mu.Lock()
	defer s.ps.mu.Unlock()
	for _, p := range ps {
		s.ps.set.Remove(p)
	}
}

// damagedIndexes returns an error naming every index that cannot be used,
// or nil.
func (s *Store) damagedIndexes() error {
	s.ps.mu.RLock()
	defer s.ps.mu.RUnlock()
	return s.ps.set.Damaged()
}

// snapshot returns the known packs, sorted by name, each with a mask of
// the entries that are the mapped copy of their object.
func (s *Store) snapshot() ([]*packset.Pack, [][]bool) {
	s.ps.mu.RLock()
	defer s.ps.mu.RUnlock()
	return s.ps.set.Snapshot()
}
