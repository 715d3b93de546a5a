package repo

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
	"github.com/chunkvc/chunkvc/repo/internal/registry"
)

// registered records this repository in the configured store's registry
// and returns the other repositories registered there. It refuses a grace
// period below MinSharedGrace when there are any, unless opt.Force.
func (r *Repo) registered(ctx context.Context, opt GCOptions) ([]RepoEntry, error) {
	self, err := r.register(ctx, r.Store)
	if err != nil {
		return nil, err
	}
	entries, err := readRegistry(ctx, r.Store)
	if err != nil {
		return nil, err
	}
	var others []RepoEntry
	for _, e := range entries {
		if e.ID != self {
			others = append(others, e)
		}
	}
	if err := registry.CheckGrace(opt.Grace, opt.Force, r.Store, others); err != nil {
		return nil, err
	}
	return others, nil
}

// othersNeed adds to need every chunk that the other registered
// repositories reference. For each, in this order:
//   - its recorded work tree is readable and still holds it (its id file):
//     every commit reachable from its refs, its reflog entries newer than
//     since, and its recorded tips, read from its own Git;
//   - every recorded tip is in this repository's Git (same remote,
//     fetched): the commits reachable from them;
//   - otherwise its chunks are unknown, and othersNeed fails, naming every
//     such repository with where it was and its tips, and how to retire
//     one that no longer exists. Nothing is deleted then.
func (r *Repo) othersNeed(others []RepoEntry, since time.Time, need map[hashing.ID]chunkUse) error {
	var unknown []string
	for _, e := range others {
		got, why := r.otherReferenced(e, since)
		if why != "" {
			unknown = append(unknown, registry.Describe(e, why))
			continue
		}
		for id, u := range got {
			if _, ok := need[id]; !ok {
				need[id] = u
			}
		}
	}
	return registry.Unknown(r.Store, unknown)
}

// otherReferenced returns the chunks repository e references, or why they
// cannot be known.
func (r *Repo) otherReferenced(e RepoEntry, since time.Time) (map[hashing.ID]chunkUse, string) {
	if o := openOther(e); o != nil {
		commits, err := o.git.Reachable()
		if err != nil {
			return nil, fmt.Sprintf("reading its Git at %s failed: %v", e.Root, err)
		}
		extra, err := o.git.ReflogCommits(since)
		if err != nil {
			return nil, fmt.Sprintf("reading its reflogs at %s failed: %v", e.Root, err)
		}
		commits = append(commits, extra...)
		// Recorded tips it still has (a branch reset since): kept too.
		var tips []gitdb.Hash
		for _, h := range e.Tips {
			if _, err := o.git.ReadCommit(hashOf(h)); err == nil {
				tips = append(tips, hashOf(h))
			}
		}
		more, err := o.git.History(tips)
		if err != nil {
			return nil, fmt.Sprintf("reading its history at %s failed: %v", e.Root, err)
		}
		need, err := o.referenced(append(commits, more...))
		if err != nil {
			return nil, fmt.Sprintf("reading its manifests at %s failed: %v", e.Root, err)
		}
		return need, ""
	}
	if missing := r.missingTips(e); len(missing) > 0 {
		return nil, fmt.Sprintf("its work tree is not readable here (gone, or on another host) and this repository lacks its tips %s", strings.Join(missing, ", "))
	}
	var tips []gitdb.Hash
	for _, h := range e.Tips {
		tips = append(tips, hashOf(h))
	}
	commits, err := r.git.History(tips)
	if err == nil {
		var need map[hashing.ID]chunkUse
		if need, err = r.referenced(commits); err == nil {
			return need, ""
		}
	}
	return nil, fmt.Sprintf("reading its tips in this repository failed: %v", err)
}
