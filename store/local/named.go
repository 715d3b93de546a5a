package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/chunkvc/chunkvc/internal/writeback"
	"github.com/chunkvc/chunkvc/store"
)

// NamedDir is the folder under the root that holds named objects
// (store.Registry), apart from the fan-out folders of objects.
const NamedDir = "named"

var _ store.Registry = (*Store)(nil)

// namedPath returns the file of named object name.
func (s *Store) namedPath(name string) string {
	return filepath.Join(s.root, NamedDir, filepath.FromSlash(name))
}

// PutNamed stores data under name through a synced temp file renamed over
// the old one, then syncs the folder.
func (s *Store) PutNamed(ctx context.Context, name string, data []byte) error {
	if err := store.CheckName(name, false); err != nil {
		return err
	}
	if len(data) > store.MaxNamed {
		return fmt.Errorf("put %s in %s: %d bytes is more than %d", name, s.root, len(data), store.MaxNamed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("put %s in %s: %w", name, s.root, err)
	}
	p := s.namedPath(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("put %s in %s: %w", name, s.root, err)
	}
	if err := s.write(p, data); err != nil {
		return fmt.Errorf("put %s in %s: %w", name, s.root, err)
	}
	return nil
}

// GetNamed reads named object name.
func (s *Store) GetNamed(ctx context.Context, name string) ([]byte, error) {
	if err := store.CheckName(name, false); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("get %s in %s: %w", name, s.root, err)
	}
	f, size, err := openBounded(s.namedPath(name), store.MaxNamed)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("get %s in %s: %w", name, s.root, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get %s in %s: %w", name, s.root, err)
	}
	defer f.Close()
	b, err := readAll(f, s.namedPath(name), size)
	if err != nil {
		return nil, fmt.Errorf("get %s in %s: %w", name, s.root, err)
	}
	return b, nil
}

// ListNamed lists the named objects under prefix, skipping temp files.
func (s *Store) ListNamed(ctx context.Context, prefix string, fn func(name string) error) error {
	if err := store.CheckName(prefix, true); err != nil {
		return err
	}
	base := filepath.Join(s.root, NamedDir)
	var names []string
	err := filepath.WalkDir(filepath.Join(base, filepath.FromSlash(prefix)), func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !d.Type().IsRegular() || strings.HasPrefix(d.Name(), ".") {
			return nil
		}
		rel, err := filepath.Rel(base, p)
		if err != nil {
			return err
		}
		if name := filepath.ToSlash(rel); store.CheckName(name, false) == nil {
			names = append(names, name)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("list %s in %s: %w", prefix, s.root, err)
	}
	slices.Sort(names)
	for _, n := range names {
		if err := fn(n); err != nil {
			return err
		}
	}
	return nil
}

// DeleteNamed removes named object name and syncs its folder.
func (s *Store) DeleteNamed(ctx context.Context, name string) error {
	if err := store.CheckName(name, false); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete %s in %s: %w", name, s.root, err)
	}
	p := s.namedPath(name)
	if err := os.Remove(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("delete %s in %s: %w", name, s.root, err)
	}
	if err := writeback.SyncDir(filepath.Dir(p)); err != nil {
		return fmt.Errorf("delete %s in %s: %w", name, s.root, err)
	}
	return nil
}
