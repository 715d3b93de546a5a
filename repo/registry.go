package repo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
	"github.com/chunkvc/chunkvc/store"
)

// The registry of a store lists the repositories that keep chunks in it:
// one named object (store.Registry) per repository, repos/<id>.json,
// holding where its Git lives and the tips it last recorded. Commit and
// push refresh it; gc reads it, because in a store that several
// repositories share a chunk is garbage only when none of them references
// it.

// registryDir is the folder of the registry's entries in a store.
const registryDir = "repos/"

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
)

// RepoEntry is one repository's entry in its store's registry.
type RepoEntry struct {
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

// idFile is .git/chunkvc/id: the repository's id and the work tree it was
// made for, which tells a copy (cp -r) from the original.
type idFile struct {
	ID   string `json:"id"`
	Root string `json:"root"`
}

// repoID returns this repository's id, making one on first use. Each clone
// makes its own (.git/chunkvc is never committed or cloned). A copy of a
// repository, made with cp -r, finds its id file naming another work tree:
// if that one still holds the same id, the copy takes a new id; if not (the
// repository was moved), it keeps it.
func (r *Repo) repoID() (string, error) {
	dir, err := r.stateDir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "id")
	f, err := readIDFile(p)
	switch {
	case err == nil && (f.Root == r.Root || sameFile(f.Root, r.Root)):
		return f.ID, nil // the same work tree, perhaps through a symbolic link
	case err == nil:
		if other, err := readIDFile(filepath.Join(f.Root, ".git", "chunkvc", "id")); err == nil && other == f {
			f.ID = "" // a copy: the original is still there
		}
	case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, errBadID):
		return "", err
	}
	if f.ID == "" {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return "", err
		}
		f.ID = hex.EncodeToString(b)
	}
	f.Root = r.Root
	b, _ := json.Marshal(f)
	gt := r.gitTree()
	defer gt.Close()
	if err := gt.WriteFile("chunkvc/id", append(b, '\n'), true); err != nil {
		return "", fmt.Errorf("write repository id: %w", err)
	}
	return f.ID, nil
}

var errBadID = errors.New("not a repository id file")

// sameFile reports whether paths a and b name one existing file or folder.
func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// readIDFile reads an id file; one that does not parse is errBadID.
func readIDFile(p string) (idFile, error) {
	var f idFile
	b, err := os.ReadFile(p)
	if err != nil {
		return f, err
	}
	if json.Unmarshal(b, &f) != nil || !validID(f.ID) || !filepath.IsAbs(f.Root) {
		return idFile{}, fmt.Errorf("%s: %w", p, errBadID)
	}
	return f, nil
}

// validID accepts 32 lower-case hex digits.
func validID(id string) bool {
	if len(id) != 32 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil && strings.ToLower(id) == id
}

func entryName(id string) string { return registryDir + id + ".json" }

// entry describes this repository as it is now.
func (r *Repo) entry(id string) (*RepoEntry, error) {
	host, _ := os.Hostname()
	e := &RepoEntry{ID: id, Host: host, Root: r.Root, Tips: map[string]string{}, Updated: time.Now().UTC()}
	err := r.git.Refs().List(func(name string, h gitdb.Hash) error {
		if !strings.HasPrefix(name, "refs/heads/") && !strings.HasPrefix(name, "refs/tags/") && !strings.HasPrefix(name, "refs/remotes/") {
			return nil
		}
		if c, err := r.git.Peel(h); err == nil {
			e.Tips[name] = c.Hash.String()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if branch, det, err := r.git.Refs().Head(); err == nil && branch == "" {
		e.Tips["HEAD"] = det.String()
	}
	if remotes, err := r.git.Remotes(); err == nil {
		for _, rm := range remotes {
			if len(rm.URLs) > 0 {
				if e.Remotes == nil {
					e.Remotes = map[string]string{}
				}
				e.Remotes[rm.Name] = rm.URLs[0]
			}
		}
	}
	return e, nil
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
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return "", err
	}
	if err := reg.PutNamed(ctx, entryName(id), append(b, '\n')); err != nil {
		return "", fmt.Errorf("record repository %s in the registry of store %s: %w", id, st, err)
	}
	return id, nil
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

// registry reads every entry of st's registry. An entry that cannot be
// read or parsed is an error naming it: gc must not pass it by.
func registry(ctx context.Context, st store.Store) ([]RepoEntry, error) {
	if b, ok := st.(brokenStore); ok {
		return nil, b.fail()
	}
	reg, ok := st.(store.Registry)
	if !ok {
		return nil, fmt.Errorf("%w: store %s keeps no registry of the repositories that use it", ErrUnknownRepos, st)
	}
	var names []string
	if err := reg.ListNamed(ctx, registryDir, func(n string) error {
		names = append(names, n)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read the registry of store %s: %w", st, err)
	}
	var out []RepoEntry
	for _, n := range names {
		b, err := reg.GetNamed(ctx, n)
		if errors.Is(err, store.ErrNotFound) {
			continue // forgotten meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("read the registry of store %s: %w", st, err)
		}
		var e RepoEntry
		if err := json.Unmarshal(b, &e); err != nil || entryName(e.ID) != n {
			return nil, fmt.Errorf("%w: registry entry %s of store %s is not a repository entry (remove it with chunkvc store forget %s)",
				ErrUnknownRepos, n, st, strings.TrimSuffix(strings.TrimPrefix(n, registryDir), ".json"))
		}
		out = append(out, e)
	}
	return out, nil
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
	entries, err := registry(ctx, r.Store)
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
		case len(r.missingTips(e)) == 0:
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
	reg, ok := r.Store.(store.Registry)
	if !ok {
		return nil, fmt.Errorf("store %s keeps no registry of the repositories that use it", r.Store)
	}
	self, err := r.repoID()
	if err != nil {
		return nil, err
	}
	var names []string
	if err := reg.ListNamed(ctx, registryDir, func(n string) error {
		names = append(names, strings.TrimSuffix(strings.TrimPrefix(n, registryDir), ".json"))
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read the registry of store %s: %w", r.Store, err)
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
			return nil, fmt.Errorf("%w: no repository %q in the registry of store %s", ErrNoSuchRepo, want, r.Store)
		case len(match) > 1:
			return nil, fmt.Errorf("%w: %q names %d repositories in the registry of store %s", ErrNoSuchRepo, want, len(match), r.Store)
		case match[0] == self:
			return nil, fmt.Errorf("%w: %s is this repository, which any commit, push or gc records again", ErrNoSuchRepo, self)
		}
		full = append(full, match[0])
	}
	for _, id := range full {
		if err := reg.DeleteNamed(ctx, entryName(id)); err != nil {
			return nil, fmt.Errorf("forget repository %s in store %s: %w", id, r.Store, err)
		}
	}
	return full, nil
}

// ErrNoSuchRepo means an id given to ForgetRepos names no other
// registered repository, or more than one.
var ErrNoSuchRepo = errors.New("no such repository")

// openOther opens the Git of the repository e describes at its recorded
// work tree, if it is there and still holds that repository (its id file
// names e.ID); nil otherwise.
func openOther(e RepoEntry) *Repo {
	if !filepath.IsAbs(e.Root) {
		return nil
	}
	f, err := readIDFile(filepath.Join(e.Root, ".git", "chunkvc", "id"))
	if err != nil || f.ID != e.ID || f.Root != e.Root && !sameFile(f.Root, e.Root) {
		return nil
	}
	g, err := openGit(e.Root)
	if err != nil || !sameFile(g.Root(), e.Root) {
		return nil
	}
	return &Repo{Root: g.Root(), git: g}
}

// missingTips returns e's tips whose commits this repository's Git lacks.
func (r *Repo) missingTips(e RepoEntry) []string {
	var out []string
	for ref, h := range e.Tips {
		if _, err := r.git.ReadCommit(hashOf(h)); err != nil || len(h) != 40 {
			out = append(out, ref)
		}
	}
	sort.Strings(out)
	return out
}

// hashOf parses a commit hash recorded in a registry entry.
func hashOf(h string) gitdb.Hash {
	var out gitdb.Hash
	b, _ := hex.DecodeString(h) // what decodes, as Git's library reads a name
	copy(out[:], b)
	return out
}
