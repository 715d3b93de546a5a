package packstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/internal/packidx"
	"github.com/chunkvc/chunkvc/store/internal/packset"
	"github.com/chunkvc/chunkvc/store/internal/zcodec"
)

// failed wraps err from op on object id read from key.
func (s *Packs) failed(op string, id hashing.ID, key string, err error) error {
	if s.b.IsNotFound(err) {
		return fmt.Errorf("%s object %s: %w: no %s in %s", op, id.Short(), store.ErrNotFound, key, s.cfg.Name)
	}
	return fmt.Errorf("%s object %s (%s in %s): %w", op, id.Short(), key, s.cfg.Name, err)
}

// rangeError is the error for a range outside an object of the given size.
func rangeError(off, length, size int64) error {
	return fmt.Errorf("range at %d length %d is outside the %d-byte object", off, length, size)
}

// Put stores data under id as a loose object, unless s knows it to be
// packed (Put does not load the pack indexes to find out).
func (s *Packs) Put(ctx context.Context, id hashing.ID, data []byte) error {
	if s.Has(id) {
		return nil
	}
	_, err := s.cfg.Loose.Put(ctx, id, data)
	return err
}

// Stat returns the size of object id: from the pack indexes if it is
// packed (Modified is then its pack's), else from its loose object. When
// it is neither, packs committed since the indexes were loaded are loaded
// (one listing) and looked at before Stat reports it missing.
func (s *Packs) Stat(ctx context.Context, id hashing.ID) (store.Info, error) {
	if err := s.load(ctx); err != nil {
		return store.Info{}, fmt.Errorf("stat object %s: %w", id.Short(), err)
	}
	r, seen, ok := s.lookup(id)
	if ok {
		return s.info(r), nil
	}
	info, err := s.cfg.Loose.Stat(ctx, id)
	if !errors.Is(err, store.ErrNotFound) {
		return info, err
	}
	r, ok, ferr := s.find(ctx, id, seen)
	if ferr != nil {
		return store.Info{}, fmt.Errorf("stat object %s: %w", id.Short(), ferr)
	}
	if !ok {
		return store.Info{}, err
	}
	return s.info(r), nil
}

// info is the Info of packed entry r.
func (s *Packs) info(r packset.Ref) store.Info {
	e := r.Entry()
	s.mu.RLock()
	defer s.mu.RUnlock()
	return store.Info{ID: e.ID, Size: e.Size, Modified: r.P.Mod}
}

// Get returns a reader for length bytes of object id from off (length < 0:
// to the end), from its pack with a ranged read, or from its loose object.
// An object that is neither packed nor loose is looked for in packs
// committed since the indexes were loaded, as by Stat.
func (s *Packs) Get(ctx context.Context, id hashing.ID, off, length int64) (io.ReadCloser, error) {
	if off < 0 {
		return nil, fmt.Errorf("get object %s: negative offset %d", id.Short(), off)
	}
	if err := s.load(ctx); err != nil {
		return nil, fmt.Errorf("get object %s: %w", id.Short(), err)
	}
	r, seen, ok := s.lookup(id)
	if ok {
		return s.getPacked(ctx, id, r, off, length, true)
	}
	rc, err := s.cfg.Loose.Get(ctx, id, off, length)
	if !errors.Is(err, store.ErrNotFound) {
		return rc, err
	}
	r, ok, ferr := s.find(ctx, id, seen)
	if ferr != nil {
		return nil, fmt.Errorf("get object %s: %w", id.Short(), ferr)
	}
	if !ok {
		return nil, err
	}
	return s.getPacked(ctx, id, r, off, length, true)
}

// getPacked is Get of entry r, with a ranged read of its pack. When the
// pack is gone (rewritten by a DeleteMany) and reload is set, it reloads
// the indexes and reads the object from where it is now.
func (s *Packs) getPacked(ctx context.Context, id hashing.ID, r packset.Ref, off, length int64, reload bool) (io.ReadCloser, error) {
	e, key := r.Entry(), s.key(r.P.Name, ".pack")
	if off > e.Size || length > e.Size-off {
		return nil, s.failed("get", id, key, rangeError(off, length, e.Size))
	}
	n := length
	if n < 0 {
		n = e.Size - off
	}
	if n == 0 {
		return io.NopCloser(strings.NewReader("")), nil
	}
	var rd io.ReadCloser
	var err error
	if e.Encoding == packidx.Zstd {
		// A compressed entry is fetched whole and decoded; the range is
		// cut from the result.
		rd, err = s.b.OpenRange(ctx, id, key, e.Offset, e.Offset+e.Stored)
		if err == nil {
			return s.decoded(id, key, rd, e, off, n)
		}
	} else {
		rd, err = s.b.OpenRange(ctx, id, key, e.Offset+off, e.Offset+off+n)
		if err == nil {
			return rd, nil
		}
	}
	if !reload || !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	if ferr := s.refresh(ctx); ferr != nil {
		return nil, s.failed("get", id, key, ferr)
	}
	if r, _, ok := s.lookup(id); ok {
		return s.getPacked(ctx, id, r, off, length, false)
	}
	return s.cfg.Loose.Get(ctx, id, off, length)
}

// decoded reads compressed entry e from rd and returns bytes off..off+n of
// its decoded content.
func (s *Packs) decoded(id hashing.ID, key string, rd io.ReadCloser, e packidx.Entry, off, n int64) (io.ReadCloser, error) {
	stored, err := io.ReadAll(rd)
	_ = rd.Close()
	if err == nil && int64(len(stored)) != e.Stored {
		err = fmt.Errorf("read %d bytes of a %d-byte entry", len(stored), e.Stored)
	}
	if err != nil {
		return nil, s.failed("get", id, key, err)
	}
	raw, err := zcodec.Decompress(stored, e.Size)
	if err != nil {
		return nil, s.failed("get", id, key, fmt.Errorf("%w: zstd entry: %w", store.ErrCorrupt, err))
	}
	return io.NopCloser(bytes.NewReader(raw[off : off+n])), nil
}

// List calls fn for every loose object not packed, then for every packed
// object (an object both loose and packed is reported once, as packed).
// It first reloads the pack indexes and fails, naming them, if any cannot
// be used.
func (s *Packs) List(ctx context.Context, fn func(store.Info) error) error {
	if err := s.refresh(ctx); err != nil {
		return fmt.Errorf("list %s: %w", s.cfg.Name, err)
	}
	if err := s.damagedIndexes(); err != nil {
		return fmt.Errorf("list %s: %w", s.cfg.Name, err)
	}
	packs, masks := s.snapshot()
	packed := make(map[hashing.ID]bool)
	for _, p := range packs {
		for _, e := range p.All() {
			packed[e.ID] = true
		}
	}
	err := s.cfg.Loose.List(ctx, func(info store.Info) error {
		if packed[info.ID] {
			return nil
		}
		return fn(info)
	})
	if err != nil {
		return err
	}
	for k, p := range packs {
		s.mu.RLock()
		mod := p.Mod
		s.mu.RUnlock()
		for i, e := range p.All() {
			if !masks[k][i] {
				continue
			}
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("list %s: %w", s.cfg.Name, err)
			}
			if err := fn(store.Info{ID: e.ID, Size: e.Size, Modified: mod}); err != nil {
				return err
			}
		}
	}
	return nil
}

// PackOf returns the key of the pack object that holds id, if s knows one.
func (s *Packs) PackOf(id hashing.ID) (string, bool) {
	r, _, ok := s.lookup(id)
	if !ok {
		return "", false
	}
	return s.key(r.P.Name, ".pack"), true
}

// TouchObject refreshes the age of object id with Config.Touch: its
// pack's when it is packed (all the pack's objects are touched with it),
// else its loose object's. A missing object is an error wrapping
// store.ErrNotFound.
func (s *Packs) TouchObject(ctx context.Context, id hashing.ID) error {
	if _, err := s.Stat(ctx, id); err != nil {
		return fmt.Errorf("touch: %w", err)
	}
	key, packed := s.PackOf(id)
	if !packed {
		key = s.cfg.Loose.Key(id)
	}
	mod, err := s.cfg.Touch(ctx, key)
	if err != nil {
		return s.failed("touch", id, key, err)
	}
	if packed {
		s.Touched(id, mod)
	}
	return nil
}

// Touched records that the pack holding id was modified at mod, so that
// Stat and List report its objects as at least that young.
func (s *Packs) Touched(id hashing.ID, mod time.Time) {
	r, _, ok := s.lookup(id)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if mod.After(r.P.Mod) {
		r.P.Mod = mod
	}
}

// StatMany stats ids in parallel, up to Connections at a time, and calls
// fn once per id, in no particular order, on the caller's goroutine, with
// the object's info or the error of its Stat (wrapping store.ErrNotFound
// for a missing object). It reloads the pack indexes once, first; packed
// objects cost no request, others a stat of their loose object. An error
// from fn stops StatMany and is returned; so is a cancelled ctx.
func (s *Packs) StatMany(ctx context.Context, ids []hashing.ID, fn func(id hashing.ID, info store.Info, err error) error) error {
	if len(ids) == 0 {
		return ctx.Err()
	}
	if err := s.refresh(ctx); err != nil {
		return fmt.Errorf("stat objects in %s: %w", s.cfg.Name, err)
	}
	type result struct {
		id   hashing.ID
		info store.Info
		err  error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan result)
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range min(s.cfg.Connections, len(ids)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(ids) {
					return
				}
				var res result
				res.id = ids[i]
				if r, _, ok := s.lookup(ids[i]); ok {
					res.info = s.info(r)
				} else {
					res.info, res.err = s.cfg.Loose.Stat(ctx, ids[i])
				}
				select {
				case results <- res:
				case <-ctx.Done():
					return
				}
			}
		})
	}
	go func() { wg.Wait(); close(results) }()
	defer func() {
		cancel()
		for range results { // let the workers finish
		}
	}()
	for n := 0; n < len(ids); n++ {
		select {
		case r, ok := <-results:
			if !ok {
				return ctx.Err()
			}
			if err := fn(r.id, r.info, r.err); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// HasMany reports which of ids the store holds (see StatMany). Any
// failure other than a missing object fails the whole call: a chunk is
// never reported missing, or present, by mistake.
func (s *Packs) HasMany(ctx context.Context, ids []hashing.ID) (map[hashing.ID]bool, error) {
	has := make(map[hashing.ID]bool, len(ids))
	err := s.StatMany(ctx, ids, func(id hashing.ID, _ store.Info, err error) error {
		switch {
		case err == nil:
			has[id] = true
		case errors.Is(err, store.ErrNotFound):
			has[id] = false
		default:
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return has, nil
}
