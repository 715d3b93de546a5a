package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/internal/writeback"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/internal/packset"
)

// TmpDir is the folder under the root that holds temp files: the packs of
// batches while they are written.
const TmpDir = "tmp"

// Store is a local content-addressed store. It is safe for concurrent use,
// also by several processes sharing one root.
type Store struct {
	root string

	mu   sync.Mutex
	dirs map[string]bool // fan-out folders known to exist with a synced entry

	ps packSet

	deleting sync.Mutex // one DeleteMany at a time

	// packFiles: weak.Pointer[packset.Pack] → its open file (packFile).
	// Apart from the Store, which holds the packs: the cleanup that closes
	// a pack's file must not keep the pack reachable.
	packFiles *sync.Map

	directOnce sync.Once
	direct     bool        // packs are written with O_DIRECT: a local disk file system
	refused    atomic.Bool // the file system refused an O_DIRECT write
}

// useDirect reports whether a batch should try O_DIRECT for its packs: only
// on the local disk file systems known to do it well (on NFS and other
// network file systems every segment would be a synchronous round trip),
// and not after one refused it.
func (s *Store) useDirect() bool {
	s.directOnce.Do(func() { s.direct = localDiskFS(filepath.Join(s.root, TmpDir)) })
	return s.direct && !s.refused.Load()
}

var (
	_ store.Store       = (*Store)(nil)
	_ store.Batcher     = (*Store)(nil)
	_ store.BulkRemover = (*Store)(nil)
	_ store.Confirmer   = (*Store)(nil)
	_ store.Toucher     = (*Store)(nil)
	_ store.Repacker    = (*Store)(nil)
)

// Open opens the store at root, creating root and root/tmp if missing. It
// fails, naming the path, if root is not a folder or root/tmp cannot be
// created; a root that exists but is not writable fails at the first Put.
func Open(root string) (*Store, error) {
	if root == "" {
		return nil, errors.New("open local store: empty path")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("open local store %s: %w", root, err)
	}
	fi, err := os.Stat(abs)
	existed := err == nil
	switch {
	case existed && !fi.IsDir():
		return nil, fmt.Errorf("open local store %s: not a directory", abs)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("open local store %s: %w", abs, err)
	}
	if err := os.MkdirAll(filepath.Join(abs, TmpDir), 0o755); err != nil {
		return nil, fmt.Errorf("open local store %s: %w", abs, err)
	}
	if !existed {
		// Best effort: make the new root's own entry durable. Failing here
		// (say, an unreadable parent) does not make the store unusable.
		_ = writeback.SyncDir(filepath.Dir(abs))
	}
	return &Store{root: abs, dirs: make(map[string]bool), packFiles: new(sync.Map)}, nil
}

// Root returns the store's folder as an absolute path.
func (s *Store) Root() string { return s.root }

// String returns the store's folder.
func (s *Store) String() string { return s.root }

// path returns where object id lives.
func (s *Store) path(id hashing.ID) string {
	h := id.String()
	return filepath.Join(s.root, h[:2], h)
}

// Put stores data under id as a loose object. An existing loose object of
// the right size is kept as it is; one of the wrong size is damaged and is
// replaced. An object the Store knows to be packed is not written again.
func (s *Store) Put(ctx context.Context, id hashing.ID, data []byte) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("put object %s: %w", id.Short(), err)
	}
	if _, ok := s.packed(id); ok {
		return nil
	}
	p := s.path(id)
	if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() && fi.Size() == int64(len(data)) {
		// Another Put may have renamed it in without having synced the
		// folder yet; sync it so that returning nil means durable.
		if err := writeback.SyncDir(filepath.Dir(p)); err != nil {
			return fmt.Errorf("put object %s: %w", id.Short(), err)
		}
		return nil
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("put object %s: %w", id.Short(), err)
	}
	if _, ok, err := s.findPacked(id); err != nil {
		return fmt.Errorf("put object %s: %w", id.Short(), err)
	} else if ok {
		return nil
	}
	if err := s.ensureDir(filepath.Dir(p)); err != nil {
		return fmt.Errorf("put object %s: %w", id.Short(), err)
	}
	if err := s.write(p, data); err != nil {
		return fmt.Errorf("put object %s: %w", id.Short(), err)
	}
	return nil
}

// ensureDir creates the fan-out folder dir if needed and syncs the root so
// that its entry is durable. Each folder is synced once per Store even if it
// already existed: it may have been created, not yet synced, by a
// concurrent Put.
func (s *Store) ensureDir(dir string) error {
	s.mu.Lock()
	ok := s.dirs[dir]
	s.mu.Unlock()
	if ok {
		return nil
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	if err := writeback.SyncDir(s.root); err != nil {
		return err
	}
	s.mu.Lock()
	s.dirs[dir] = true
	s.mu.Unlock()
	return nil
}

// write puts data at p atomically and durably: temp file, chmod 0444,
// fsync, rename, fsync of p's folder. The temp file is removed on failure.
// It is created beside p, not in one shared folder: concurrent puts then
// contend on 256 fan-out folders' locks instead of one (2× faster commits
// of many small tiles, measured).
func (s *Store) write(p string, data []byte) error {
	tmp, err := stageFile(filepath.Dir(p), data)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return err
	}
	return writeback.SyncDir(filepath.Dir(p))
}

// stageFile writes data, read-only and synced, to a new temp file in dir
// and returns its path, for the caller to rename into place.
func stageFile(dir string, data []byte) (tmp string, err error) {
	f, err := os.CreateTemp(dir, ".put-*")
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return "", err
	}
	// chmod before fsync, so that the mode is synced with the bytes.
	if err = f.Chmod(0o444); err != nil {
		return "", err
	}
	if err = f.Sync(); err != nil {
		return "", err
	}
	return f.Name(), f.Close()
}

// Get returns a reader for length bytes of object id from off (length < 0:
// to the end). For a loose object, and a packed one stored raw, the reader
// is an *io.SectionReader over the open file; for a packed object stored
// compressed or as a delta, Get decodes the whole object (and its delta
// base chain) into memory. Either way it implements io.ReaderAt and
// io.Seeker.
func (s *Store) Get(ctx context.Context, id hashing.ID, off, length int64) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("get object %s: %w", id.Short(), err)
	}
	rc, err := viaPack(s, id,
		func(r packset.Ref) (io.ReadCloser, error) { return s.getPacked(ctx, r, off, length) },
		func() (io.ReadCloser, error) { return s.getLoose(id, off, length) })
	if err != nil {
		return nil, failed("get", id, err)
	}
	return rc, nil
}

func (s *Store) getLoose(id hashing.ID, off, length int64) (io.ReadCloser, error) {
	p := s.path(id)
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = &fs.PathError{Op: "get", Path: p, Err: errors.New("not a regular file")}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	size := fi.Size()
	if off < 0 || off > size || length > size-off {
		f.Close()
		return nil, &fs.PathError{Op: "read", Path: p,
			Err: fmt.Errorf("range at %d length %d is outside the %d-byte object", off, length, size)}
	}
	if length < 0 {
		length = size - off
	}
	return &reader{io.NewSectionReader(f, off, length), f}, nil
}

// reader is a section of an open object file.
type reader struct {
	*io.SectionReader
	f *os.File
}

// Close closes the file.
func (r *reader) Close() error { return r.f.Close() }

// Stat returns the size of object id. A packed object's Modified is its
// pack file's.
func (s *Store) Stat(ctx context.Context, id hashing.ID) (store.Info, error) {
	if err := ctx.Err(); err != nil {
		return store.Info{}, fmt.Errorf("stat object %s: %w", id.Short(), err)
	}
	info, err := viaPack(s, id,
		func(r packset.Ref) (store.Info, error) {
			fi, err := os.Stat(s.packPath(r.P.Name, ".pack"))
			if err != nil {
				return store.Info{}, packErr(err)
			}
			return store.Info{ID: id, Size: r.Entry().Size, Modified: fi.ModTime()}, nil
		},
		func() (store.Info, error) {
			p := s.path(id)
			fi, err := os.Stat(p)
			if err == nil && !fi.Mode().IsRegular() {
				err = &fs.PathError{Op: "stat", Path: p, Err: errors.New("not a regular file")}
			}
			if err != nil {
				return store.Info{}, err
			}
			return store.Info{ID: id, Size: fi.Size(), Modified: fi.ModTime()}, nil
		})
	if err != nil {
		return store.Info{}, failed("stat", id, err)
	}
	return info, nil
}

// Confirm implements store.Confirmer: a pack's file is looked at once (its
// length against its index) for all the objects it holds; loose objects,
// and packs that vanished, take Stat's path.
func (s *Store) Confirm(ctx context.Context, want []store.Sized) error {
	packOK := map[*packset.Pack]bool{}
	for _, w := range want {
		id, size := w.ID, w.Size
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("confirm objects: %w", err)
		}
		if r, ok := s.packed(id); ok {
			good, seen := packOK[r.P]
			if !seen {
				path := s.packPath(r.P.Name, ".pack")
				fi, err := os.Stat(path)
				switch {
				case err == nil && fi.Size() != r.P.PackSize:
					return fmt.Errorf("object %s: %w: pack %s is %d bytes, its index says %d", id.Short(), store.ErrCorrupt, path, fi.Size(), r.P.PackSize)
				case err != nil && !errors.Is(err, fs.ErrNotExist):
					return failed("stat", id, err)
				}
				good = err == nil
				packOK[r.P] = good
			}
			if good {
				if got := r.Entry().Size; got != size {
					return fmt.Errorf("object %s: %w: stored size %d, expected %d", id.Short(), store.ErrCorrupt, got, size)
				}
				continue
			}
		}
		if err := store.Verify(ctx, s, id, size, false); err != nil {
			return err
		}
	}
	return nil
}

// List calls fn for every object, packed or loose, once, skipping tmp/ and
// any name that is not an object. Objects deleted while listing may or may
// not be reported. If a pack index cannot be read, List fails naming it
// before calling fn at all: a partial listing must not pass for a whole one.
func (s *Store) List(ctx context.Context, fn func(store.Info) error) error {
	if _, err := s.refresh(false); err != nil {
		return fmt.Errorf("list local store: %w", err)
	}
	if err := s.damagedIndexes(); err != nil {
		return fmt.Errorf("list local store: %w", err)
	}
	if err := s.listPacked(ctx, fn); err != nil {
		return err
	}
	fans, err := os.ReadDir(s.root)
	if err != nil {
		return fmt.Errorf("list local store: %w", err)
	}
	for _, fan := range fans {
		if !fan.IsDir() || !isFanOut(fan.Name()) {
			continue
		}
		dir := filepath.Join(s.root, fan.Name())
		ents, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("list local store: %w", err)
		}
		for _, e := range ents {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("list local store %s: %w", s.root, err)
			}
			name := e.Name()
			if !e.Type().IsRegular() || len(name) != 64 || name[:2] != fan.Name() {
				continue
			}
			id, err := hashing.ParseID(name)
			if err != nil {
				continue
			}
			if _, ok := s.packed(id); ok {
				continue // listed with the packs
			}
			fi, err := e.Info()
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return fmt.Errorf("list local store: %w", err)
			}
			if err := fn(store.Info{ID: id, Size: fi.Size(), Modified: fi.ModTime()}); err != nil {
				return err
			}
		}
	}
	return nil
}

// isFanOut reports whether name is two lower-case hex digits.
func isFanOut(name string) bool {
	if len(name) != 2 {
		return false
	}
	for i := 0; i < 2; i++ {
		c := name[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Delete removes object id; a missing object is not an error. It is
// DeleteMany of id alone: deleting a packed object rewrites its pack.
func (s *Store) Delete(ctx context.Context, id hashing.ID) error {
	return s.DeleteMany(ctx, []hashing.ID{id})
}

// failed wraps err from operation op on object id; a missing file also
// wraps store.ErrNotFound. err names the path (it is an *fs.PathError).
func failed(op string, id hashing.ID, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s object %s: %w: %w", op, id.Short(), store.ErrNotFound, err)
	}
	return fmt.Errorf("%s object %s: %w", op, id.Short(), err)
}

// Touch marks an existing object as just used, so that a garbage collection
// running elsewhere with a grace period spares it while a commit that
// reuses it is in flight. Touching a packed object touches its whole pack.
func (s *Store) Touch(ctx context.Context, id hashing.ID) error {
	now := time.Now()
	_, err := viaPack(s, id,
		func(r packset.Ref) (struct{}, error) {
			return struct{}{}, packErr(os.Chtimes(s.packPath(r.P.Name, ".pack"), now, now))
		},
		func() (struct{}, error) { return struct{}{}, os.Chtimes(s.path(id), now, now) })
	if err != nil {
		return failed("touch", id, err)
	}
	return nil
}
