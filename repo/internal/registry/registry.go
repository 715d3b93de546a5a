package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chunkvc/chunkvc/store"
)

// Dir is the folder of the registry's entries in a store.
const Dir = "repos/"

// MinSharedGrace is the shortest grace period gc takes, without Force, on
// a store that other repositories use: shorter, a commit in flight in one
// of them, whose chunks are stored but not yet named by its registry
// entry, could lose them.
const MinSharedGrace = time.Hour

var (
	// ErrUnknownRepos means gc cannot account for the chunks of some
	// repositories sharing the store, so it deletes nothing.
	ErrUnknownRepos = errors.New("gc refused: repositories sharing the store cannot be accounted for")
	// ErrShortGrace means gc was asked for a grace period below
	// MinSharedGrace on a store other repositories use, without Force.
	ErrShortGrace = errors.New("gc refused: grace period too short for a shared store")
	// ErrNoSuchRepo means an id given to forget names no other
	// registered repository, or more than one.
	ErrNoSuchRepo = errors.New("no such repository")
)

// Entry is one repository's entry in its store's registry.
type Entry struct {
	ID   string `json:"id"`
	Host string `json:"host"`
	// Root is the repository's work tree on Host.
	Root    string            `json:"root"`
	Remotes map[string]string `json:"remotes,omitempty"`
	// Tips maps each ref (branches, tags, remote-tracking refs, and HEAD
	// when detached) to the commit it named when the entry was written.
	Tips    map[string]string `json:"tips"`
	Updated time.Time         `json:"updated"`
}

// EntryName is the named object holding the entry of id.
func EntryName(id string) string { return Dir + id + ".json" }

// idOf is the id an entry's object name holds.
func idOf(name string) string {
	return strings.TrimSuffix(strings.TrimPrefix(name, Dir), ".json")
}

// Put writes e into reg, the registry of a store, under its id, replacing
// what was there.
func Put(ctx context.Context, reg store.Registry, e *Entry) error {
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	if err := reg.PutNamed(ctx, EntryName(e.ID), append(b, '\n')); err != nil {
		return fmt.Errorf("record repository %s in the registry of store %s: %w", e.ID, reg, err)
	}
	return nil
}

// Read reads every entry of st's registry. A store that keeps none, or an
// entry that cannot be parsed, is an error wrapping ErrUnknownRepos that
// names it: gc must not pass it by.
func Read(ctx context.Context, st store.Store) ([]Entry, error) {
	reg, ok := st.(store.Registry)
	if !ok {
		return nil, fmt.Errorf("%w: store %s keeps no registry of the repositories that use it", ErrUnknownRepos, st)
	}
	var names []string
	if err := reg.ListNamed(ctx, Dir, func(n string) error {
		names = append(names, n)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read the registry of store %s: %w", st, err)
	}
	var out []Entry
	for _, n := range names {
		b, err := reg.GetNamed(ctx, n)
		if errors.Is(err, store.ErrNotFound) {
			continue // forgotten meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("read the registry of store %s: %w", st, err)
		}
		var e Entry
		if err := json.Unmarshal(b, &e); err != nil || EntryName(e.ID) != n {
			return nil, fmt.Errorf("%w: registry entry %s of store %s is not a repository entry (remove it with chunkvc store forget %s)",
				ErrUnknownRepos, n, st, idOf(n))
		}
		out = append(out, e)
	}
	return out, nil
}

// Forget removes from st's registry the entries of the given ids, or of
// unique prefixes of at least 6 digits, and returns the full ids removed.
// The caller's own id, which self returns once st is known to keep a
// registry, cannot be forgotten: any commit, push or gc records it again.
// Nothing is removed unless every id resolves.
func Forget(ctx context.Context, st store.Store, self func() (string, error), ids []string) ([]string, error) {
	reg, ok := st.(store.Registry)
	if !ok {
		return nil, fmt.Errorf("store %s keeps no registry of the repositories that use it", st)
	}
	me, err := self()
	if err != nil {
		return nil, err
	}
	var names []string
	if err := reg.ListNamed(ctx, Dir, func(n string) error {
		names = append(names, idOf(n))
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read the registry of store %s: %w", st, err)
	}
	var full []string
	for _, want := range ids {
		var match []string
		for _, n := range names {
			if n == want || len(want) >= 6 && strings.HasPrefix(n, want) {
				match = append(match, n)
			}
		}
		switch {
		case len(match) == 0:
			return nil, fmt.Errorf("%w: no repository %q in the registry of store %s", ErrNoSuchRepo, want, st)
		case len(match) > 1:
			return nil, fmt.Errorf("%w: %q names %d repositories in the registry of store %s", ErrNoSuchRepo, want, len(match), st)
		case match[0] == me:
			return nil, fmt.Errorf("%w: %s is this repository, which any commit, push or gc records again", ErrNoSuchRepo, me)
		}
		full = append(full, match[0])
	}
	for _, id := range full {
		if err := reg.DeleteNamed(ctx, EntryName(id)); err != nil {
			return nil, fmt.Errorf("forget repository %s in store %s: %w", id, st, err)
		}
	}
	return full, nil
}
