package repo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/chunkvc/chunkvc/repo/internal/gc"
	"github.com/chunkvc/chunkvc/repo/internal/registry"
	"github.com/chunkvc/chunkvc/store"
)

// The registry of a store lists the repositories that keep chunks in it
// (package registry). Commit and push refresh it; gc reads it, because in
// a store that several repositories share a chunk is garbage only when
// none of them references it.

// MinSharedGrace is the shortest grace period gc takes, without Force, on
// a store that other repositories use.
const MinSharedGrace = registry.MinSharedGrace

var (
	// ErrUnknownRepos means gc cannot account for the chunks of some
	// repositories sharing the store, so it deletes nothing.
	ErrUnknownRepos = registry.ErrUnknownRepos
	// ErrShortGrace means gc was asked for a grace period below
	// MinSharedGrace on a store other repositories use, without Force.
	ErrShortGrace = registry.ErrShortGrace
	// ErrNoSuchRepo means an id given to ForgetRepos names no other
	// registered repository, or more than one.
	ErrNoSuchRepo = registry.ErrNoSuchRepo
)

// RepoEntry is one repository's entry in its store's registry.
type RepoEntry = registry.Entry

// repoID returns this repository's id, making one on first use
// (registry.ResolveID).
func (r *Repo) repoID() (string, error) {
	dir, err := r.stateDir()
	if err != nil {
		return "", err
	}
	f, write, err := registry.ResolveID(filepath.Join(dir, "id"), r.Root)
	if err != nil || !write {
		return f.ID, err
	}
	gt := r.gitTree()
	defer gt.Close()
	if err := gt.WriteFile("chunkvc/id", f.Bytes(), true); err != nil {
		return "", fmt.Errorf("write repository id: %w", err)
	}
	return f.ID, nil
}

// entry describes this repository as it is now.
func (r *Repo) entry(id string) (*RepoEntry, error) {
	host, _ := os.Hostname()
	tips, err := r.git.Tips()
	if err != nil {
		return nil, err
	}
	return &RepoEntry{ID: id, Host: host, Root: r.Root, Tips: tips, Remotes: r.git.RemoteURLs(), Updated: time.Now().UTC()}, nil
}

// register writes this repository's entry into the registry of st and
// returns its id. A store without a registry is left alone.
func (r *Repo) register(ctx context.Context, st store.Store) (string, error) {
	id, err := r.repoID()
	if err != nil {
		return "", err
	}
	if b, ok := st.(brokenStore); ok {
		return "", b.fail()
	}
	reg, ok := st.(store.Registry)
	if !ok {
		return id, nil
	}
	e, err := r.entry(id)
	if err != nil {
		return "", fmt.Errorf("describe repository %s: %w", r.Root, err)
	}
	return id, registry.Put(ctx, reg, e)
}

// registerIn records this repository and its tips in the registry of st,
// which now holds chunks of its commits; done says what was done already
// (a commit made, chunks stored), for the error.
func (r *Repo) registerIn(ctx context.Context, st store.Store, done string) error {
	if _, err := r.register(ctx, st); err != nil {
		return fmt.Errorf("%s, but %w; until the next commit, push or gc records it, gc in other repositories sharing the store spares this one's new chunks only for its grace period", done, err)
	}
	return nil
}

// registerAsync is registerIn in the background (a commit writes the
// entry while it saves its stat cache: each costs a few fsyncs); the
// returned function waits for it and returns its error, each time it is
// called.
func (r *Repo) registerAsync(ctx context.Context, st store.Store, done string) func() error {
	ch := make(chan error, 1)
	go func() { ch <- r.registerIn(ctx, st, done) }()
	return sync.OnceValue(func() error { return <-ch })
}

// readRegistry reads every entry of st's registry (registry.Read); a
// store that could not be opened says why.
func readRegistry(ctx context.Context, st store.Store) ([]RepoEntry, error) {
	if b, ok := st.(brokenStore); ok {
		return nil, b.fail()
	}
	return registry.Read(ctx, st)
}

// RepoStatus is a registry entry as this repository sees it.
type RepoStatus struct {
	RepoEntry
	// This marks this repository's own entry.
	This bool `json:"this"`
	// Known says how gc here accounts for its chunks: "this", "readable"
	// (its Git is at Root, with its id), "fetched" (every tip is in this
	// repository's Git), or "unknown" (gc refuses while it is registered).
	Known string `json:"known"`
}

// StoreRepos lists the registry of the configured store, this repository
// first, then by id, recording this repository first.
func (r *Repo) StoreRepos(ctx context.Context) ([]RepoStatus, error) {
	self, err := r.register(ctx, r.Store)
	if err != nil {
		return nil, err
	}
	entries, err := readRegistry(ctx, r.Store)
	if err != nil {
		return nil, err
	}
	out := make([]RepoStatus, 0, len(entries))
	for _, e := range entries {
		st := RepoStatus{RepoEntry: e, This: e.ID == self, Known: "unknown"}
		switch {
		case st.This:
			st.Known = "this"
		case openOther(e) != nil:
			st.Known = "readable"
		case len(gc.MissingTips(r.git, e)) == 0:
			st.Known = "fetched"
		}
		out = append(out, st)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].This && !out[j].This })
	return out, nil
}

// ForgetRepos removes the entries of the given ids (or unique prefixes of
// at least 6 digits) from the configured store's registry and returns the
// full ids removed. This repository cannot be forgotten.
func (r *Repo) ForgetRepos(ctx context.Context, ids []string) ([]string, error) {
	return registry.Forget(ctx, r.Store, r.repoID, ids)
}

// openOther is gc's Opener: the Git of the repository e describes at its
// recorded work tree, if it is there and still holds that repository (its
// id file names e.ID); nil otherwise.
func openOther(e RepoEntry) gc.Git {
	if !registry.InPlace(e) {
		return nil
	}
	g, err := openGit(e.Root)
	if err != nil || !registry.SameFile(g.Root(), e.Root) {
		return nil
	}
	return g
}
