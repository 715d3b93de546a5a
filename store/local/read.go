package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"sync"
	"time"
	"weak"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/internal/packidx"
	"github.com/chunkvc/chunkvc/store/internal/packset"
	"github.com/chunkvc/chunkvc/store/internal/zcodec"
)

// maxChain bounds the delta chains that reads follow. Writes keep chains
// to maxDepth; the slack covers duplicates packed by racing processes, and
// the bound turns a cycle into an error.
const maxChain = 4 * maxDepth

// staleError means the packs changed under a read: a pack file is missing
// although its index was read, or a delta's base is missing. Both happen
// when a DeleteMany (of this or another process) rewrites packs; the
// object is then found again after reloading the indexes.
type staleError struct{ err error }

func (e *staleError) Error() string { return e.err.Error() }
func (e *staleError) Unwrap() error { return e.err }

// packErr marks a missing pack file as stale.
func packErr(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return &staleError{err}
	}
	return err
}

// viaPack runs packed on id's pack if the Store knows one, or else loose;
// when loose finds no file, it catches up with the packs folder and tries
// packed. A stale read (a pack or a delta base that vanished) makes it
// reload the packs folder and try once more. Errors are not wrapped.
func viaPack[T any](s *Store, id hashing.ID, packed func(packset.Ref) (T, error), loose func() (T, error)) (T, error) {
	r, ok := s.packed(id)
	if !ok {
		v, err := loose()
		if !errors.Is(err, fs.ErrNotExist) {
			return v, err
		}
		var ferr error
		r, ok, ferr = s.findPacked(id)
		if ferr != nil {
			return v, errors.Join(err, ferr)
		}
		if !ok {
			return v, s.missing(err)
		}
	}
	v, err := packed(r)
	var stale *staleError
	if !errors.As(err, &stale) {
		return v, err
	}
	if _, err := s.refresh(true); err != nil {
		return v, err
	}
	if r, ok = s.packed(id); !ok {
		v, err := loose()
		return v, s.missing(err)
	}
	return packed(r)
}

// missing adds to err, when it says that an object's file does not exist,
// what makes packs of the store unreadable, if anything does: the object
// may be in one of them, so the store is damaged (store.ErrCorrupt), not
// only without the object (store.ErrNotFound, which the error still
// wraps).
func (s *Store) missing(err error) error {
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if damage := s.unreadablePacks(); damage != nil {
		return &unreadableError{err, damage}
	}
	return err
}

// unreadableError is an object not found in a store that cannot read
// some of its packs.
type unreadableError struct{ missing, damage error }

func (e *unreadableError) Error() string {
	return e.missing.Error() + "; the store cannot read some of its packs: " + e.damage.Error()
}

func (e *unreadableError) Unwrap() []error { return []error{e.missing, e.damage} }

// openPack opens p's file and checks its length against the index, so
// that a truncated pack fails early.
func (s *Store) openPack(p *packset.Pack) (*os.File, error) {
	path := s.packPath(p.Name, ".pack")
	f, err := os.Open(path)
	if err != nil {
		return nil, packErr(err)
	}
	fi, err := f.Stat()
	if err == nil && fi.Size() != p.PackSize {
		err = &fs.PathError{Op: "read", Path: path,
			Err: fmt.Errorf("%w: pack is %d bytes, its index says %d", store.ErrCorrupt, fi.Size(), p.PackSize)}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// packFile returns p's file, opened at the first read of p and shared by
// the reads after: a checkout reads hundreds of thousands of objects, and
// an open and a close for each were a third of its time. Its length is
// checked against the index at every read, as when each read opened it.
// The caller must not close the file, and must keep p reachable while it
// reads it: the file is closed once p is not (once a reload forgot the
// pack and the reads in progress are done).
func (s *Store) packFile(p *packset.Pack) (*os.File, error) {
	wp := weak.Make(p)
	if v, ok := s.packFiles.Load(wp); ok {
		f := v.(*os.File)
		fi, err := f.Stat()
		if err == nil && fi.Size() != p.PackSize {
			err = fmt.Errorf("%w: pack is %d bytes, its index says %d", store.ErrCorrupt, fi.Size(), p.PackSize)
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: s.packPath(p.Name, ".pack"), Err: err}
		}
		return f, nil
	}
	f, err := s.openPack(p)
	if err != nil {
		return nil, err // not kept: the next read tries again
	}
	if prev, loaded := s.packFiles.LoadOrStore(wp, f); loaded {
		f.Close()
		return prev.(*os.File), nil
	}
	runtime.AddCleanup(p, func(c openPack) {
		c.files.Delete(c.p)
		c.f.Close()
	}, openPack{s.packFiles, wp, f})
	return f, nil
}

// openPack is what packFile closes and forgets when its pack goes.
type openPack struct {
	files *sync.Map
	p     weak.Pointer[packset.Pack]
	f     *os.File
}

// readStored returns the stored bytes of entry e of pack p.
func (s *Store) readStored(p *packset.Pack, e packidx.Entry) ([]byte, error) {
	f, err := s.packFile(p)
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(p)
	return readEntry(f, e)
}

// readEntry reads the stored bytes of entry e from its open pack file.
func readEntry(f *os.File, e packidx.Entry) ([]byte, error) {
	b := make([]byte, e.Stored)
	if _, err := f.ReadAt(b, e.Offset); err != nil {
		return nil, fmt.Errorf("read %d bytes at %d of %s: %w", e.Stored, e.Offset, f.Name(), err)
	}
	return b, nil
}

// decode returns the raw bytes of entry e of pack p, following at most
// budget more delta bases.
func (s *Store) decode(ctx context.Context, p *packset.Pack, e packidx.Entry, budget int) ([]byte, error) {
	stored, err := s.readStored(p, e)
	if err != nil {
		return nil, err
	}
	var raw []byte
	switch e.Encoding {
	case packidx.Raw:
		return stored, nil
	case packidx.Zstd:
		raw, err = zcodec.Decompress(stored, e.Size)
	case packidx.Delta:
		if budget <= 0 {
			return nil, fmt.Errorf("%w: delta chain longer than %d at %s", store.ErrCorrupt, maxChain, e.ID.Short())
		}
		var base []byte
		if base, err = s.raw(ctx, e.Base, budget-1); err != nil {
			err = fmt.Errorf("%w: delta base %s: %w", store.ErrCorrupt, e.Base.Short(), err)
			if errors.Is(err, fs.ErrNotExist) {
				err = &staleError{err}
			}
			return nil, err
		}
		raw, err = zcodec.DecodeDelta(stored, base, e.Size)
	default:
		err = fmt.Errorf("unknown encoding %d", e.Encoding)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: decode %s object at %d in %s: %w",
			store.ErrCorrupt, e.Encoding, e.Offset, s.packPath(p.Name, ".pack"), err)
	}
	return raw, nil
}

// raw returns the whole of object id, packed or loose, unverified.
func (s *Store) raw(ctx context.Context, id hashing.ID, budget int) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return viaPack(s, id,
		func(r packset.Ref) ([]byte, error) { return s.decode(ctx, r.P, r.Entry(), budget) },
		func() ([]byte, error) { return readLoose(s.path(id)) })
}

// readLoose reads a loose object's file.
func readLoose(p string) ([]byte, error) { return readWhole(p, store.MaxObject) }

// readWhole reads the regular file p of at most max bytes. Errors are
// *fs.PathError naming p, so a missing file still says fs.ErrNotExist.
func readWhole(p string, max int64) ([]byte, error) {
	f, size, err := openBounded(p, max)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(f, p, size)
}

// openBounded opens the regular file p of at most max bytes and returns
// its size; errors are as readWhole's.
func openBounded(p string, max int64) (*os.File, int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > max {
		f.Close()
		return nil, 0, &fs.PathError{Op: "read", Path: p, Err: fmt.Errorf("not a regular file of at most %d bytes", max)}
	}
	return f, fi.Size(), nil
}

// readAll reads the size bytes of f, opened from p.
func readAll(f *os.File, p string, size int64) ([]byte, error) {
	b := make([]byte, size)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, &fs.PathError{Op: "read", Path: p, Err: err}
	}
	return b, nil
}

// getPacked is Get of a packed object.
func (s *Store) getPacked(ctx context.Context, r packset.Ref, off, length int64) (io.ReadCloser, error) {
	e := r.Entry()
	if off < 0 || off > e.Size || length > e.Size-off {
		return nil, fmt.Errorf("range at %d length %d is outside the %d-byte object in %s",
			off, length, e.Size, s.packPath(r.P.Name, ".pack"))
	}
	if length < 0 {
		length = e.Size - off
	}
	if e.Encoding == packidx.Raw {
		f, err := s.packFile(r.P)
		if err != nil {
			return nil, err
		}
		return &packReader{io.NewSectionReader(f, e.Offset+off, length), r.P}, nil
	}
	raw, err := s.decode(ctx, r.P, e, maxChain)
	if err != nil {
		return nil, err
	}
	return bytesReader{bytes.NewReader(raw[off : off+length])}, nil
}

// packReader reads a raw object from its pack's shared file (packFile),
// which it keeps open by holding the pack; Close does nothing.
type packReader struct {
	sr *io.SectionReader
	p  *packset.Pack
}

func (r *packReader) Read(b []byte) (int, error) {
	defer runtime.KeepAlive(r.p)
	return r.sr.Read(b)
}

func (r *packReader) ReadAt(b []byte, off int64) (int, error) {
	defer runtime.KeepAlive(r.p)
	return r.sr.ReadAt(b, off)
}

func (r *packReader) Seek(off int64, whence int) (int64, error) { return r.sr.Seek(off, whence) }

// Size is the object's length, as io.SectionReader's Size.
func (r *packReader) Size() int64 { return r.sr.Size() }

func (r *packReader) Close() error { return nil }

// bytesReader is a decoded object in memory.
type bytesReader struct{ *bytes.Reader }

// Close does nothing.
func (bytesReader) Close() error { return nil }

// listPacked is List of the packed objects. It reloads the packs folder
// if a pack vanished (rewritten by another process), so that the objects
// it held are listed from their new pack.
func (s *Store) listPacked(ctx context.Context, fn func(store.Info) error) error {
	var (
		packs []*packset.Pack
		masks [][]bool
		mods  []time.Time
	)
	for try := 0; ; try++ {
		packs, masks = s.snapshot()
		mods = make([]time.Time, len(packs))
		vanished := false
		for k, p := range packs {
			fi, err := os.Stat(s.packPath(p.Name, ".pack"))
			if errors.Is(err, fs.ErrNotExist) {
				if try < 3 {
					vanished = true
					break
				}
				continue // mods[k] stays zero: skipped below
			}
			if err != nil {
				return fmt.Errorf("list local store: %w", err)
			}
			mods[k] = fi.ModTime()
		}
		if !vanished {
			break
		}
		if _, err := s.refresh(true); err != nil {
			return fmt.Errorf("list local store: %w", err)
		}
		if err := s.damagedIndexes(); err != nil {
			return fmt.Errorf("list local store: %w", err)
		}
	}
	for k, p := range packs {
		if mods[k].IsZero() {
			continue
		}
		for i, e := range p.All() {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("list local store %s: %w", s.root, err)
			}
			if !masks[k][i] {
				continue
			}
			if err := fn(store.Info{ID: e.ID, Size: e.Size, Modified: mods[k]}); err != nil {
				return err
			}
		}
	}
	return nil
}

// Location says where and how an object is kept on disk.
type Location struct {
	Path     string // the loose file or the pack file
	Off, Len int64  // its stored bytes within Path
	Packed   bool
	Encoding string // raw, zstd or delta
	Base     hashing.ID
	Depth    int // delta chain length; 0 unless Encoding is delta
}

// Locate says where object id is kept: for messages naming the file that
// holds a damaged object, and for tests that damage one on purpose.
func (s *Store) Locate(id hashing.ID) (Location, error) {
	return viaPack(s, id, func(r packset.Ref) (Location, error) {
		e := r.Entry()
		return Location{Path: s.packPath(r.P.Name, ".pack"), Off: int64(e.Offset), Len: int64(e.Stored), Packed: true,
			Encoding: e.Encoding.String(), Base: e.Base, Depth: int(e.Depth)}, nil
	}, func() (Location, error) {
		p := s.path(id)
		fi, err := os.Stat(p)
		if err != nil {
			return Location{}, failed("locate", id, err)
		}
		return Location{Path: p, Len: fi.Size(), Encoding: "raw"}, nil
	})
}
