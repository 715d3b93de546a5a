// Package mem is an in-memory content-addressed store for tests. It copies
// bytes on the way in and out, so callers may reuse their buffers.
package mem

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
)

// Store is a map-backed Store, safe for concurrent use.
type Store struct {
	mu    sync.RWMutex
	objs  map[hashing.ID][]byte
	named map[string][]byte
}

var (
	_ store.Store    = (*Store)(nil)
	_ store.Registry = (*Store)(nil)
)

// New returns an empty store.
func New() *Store { return &Store{objs: make(map[hashing.ID][]byte), named: make(map[string][]byte)} }

// String names the store.
func (s *Store) String() string { return "mem" }

// Put stores a copy of data under id unless id is already present.
func (s *Store) Put(ctx context.Context, id hashing.ID, data []byte) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("put object %s: %w", id.Short(), err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.objs[id]; !ok {
		s.objs[id] = bytes.Clone(data)
	}
	return nil
}

// Get returns a reader over a copy of the requested range.
func (s *Store) Get(ctx context.Context, id hashing.ID, off, length int64) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("get object %s: %w", id.Short(), err)
	}
	s.mu.RLock()
	b, ok := s.objs[id]
	s.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("get object %s in mem store: %w", id.Short(), store.ErrNotFound)
	}
	size := int64(len(b))
	if off < 0 || off > size || length > size-off {
		return nil, fmt.Errorf("get object %s in mem store: range at %d length %d is outside the %d-byte object",
			id.Short(), off, length, size)
	}
	if length < 0 {
		length = size - off
	}
	return io.NopCloser(bytes.NewReader(bytes.Clone(b[off : off+length]))), nil
}

// Stat returns the object's size.
func (s *Store) Stat(ctx context.Context, id hashing.ID) (store.Info, error) {
	if err := ctx.Err(); err != nil {
		return store.Info{}, fmt.Errorf("stat object %s: %w", id.Short(), err)
	}
	s.mu.RLock()
	b, ok := s.objs[id]
	s.mu.RUnlock()
	if !ok {
		return store.Info{}, fmt.Errorf("stat object %s in mem store: %w", id.Short(), store.ErrNotFound)
	}
	return store.Info{ID: id, Size: int64(len(b))}, nil
}

// List calls fn for a snapshot of the objects, without holding the lock, so
// fn may use the store.
func (s *Store) List(ctx context.Context, fn func(store.Info) error) error {
	s.mu.RLock()
	infos := make([]store.Info, 0, len(s.objs))
	for id, b := range s.objs {
		infos = append(infos, store.Info{ID: id, Size: int64(len(b))})
	}
	s.mu.RUnlock()
	for _, info := range infos {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("list mem store: %w", err)
		}
		if err := fn(info); err != nil {
			return err
		}
	}
	return nil
}

// Delete removes the object; a missing object is not an error.
func (s *Store) Delete(ctx context.Context, id hashing.ID) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete object %s: %w", id.Short(), err)
	}
	s.mu.Lock()
	delete(s.objs, id)
	s.mu.Unlock()
	return nil
}

// PutNamed stores a copy of data under name.
func (s *Store) PutNamed(ctx context.Context, name string, data []byte) error {
	if err := store.CheckName(name, false); err != nil {
		return err
	}
	if len(data) > store.MaxNamed {
		return fmt.Errorf("put %s in mem store: %d bytes is more than %d", name, len(data), store.MaxNamed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("put %s: %w", name, err)
	}
	s.mu.Lock()
	s.named[name] = bytes.Clone(data)
	s.mu.Unlock()
	return nil
}

// GetNamed returns a copy of the bytes under name.
func (s *Store) GetNamed(ctx context.Context, name string) ([]byte, error) {
	if err := store.CheckName(name, false); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("get %s: %w", name, err)
	}
	s.mu.RLock()
	b, ok := s.named[name]
	s.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("get %s in mem store: %w", name, store.ErrNotFound)
	}
	return bytes.Clone(b), nil
}

// ListNamed calls fn for a sorted snapshot of the names under prefix.
func (s *Store) ListNamed(ctx context.Context, prefix string, fn func(name string) error) error {
	if err := store.CheckName(prefix, true); err != nil {
		return err
	}
	s.mu.RLock()
	var names []string
	for n := range s.named {
		if strings.HasPrefix(n, prefix) {
			names = append(names, n)
		}
	}
	s.mu.RUnlock()
	slices.Sort(names)
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("list %s: %w", prefix, err)
		}
		if err := fn(n); err != nil {
			return err
		}
	}
	return nil
}

// DeleteNamed removes name.
func (s *Store) DeleteNamed(ctx context.Context, name string) error {
	if err := store.CheckName(name, false); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete %s: %w", name, err)
	}
	s.mu.Lock()
	delete(s.named, name)
	s.mu.Unlock()
	return nil
}
