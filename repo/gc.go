package repo

import (
	"context"
	"fmt"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/repo/internal/gc"
	"github.com/chunkvc/chunkvc/repo/internal/reach"
	"github.com/chunkvc/chunkvc/repo/internal/registry"
)

// GCOptions configures GC (gc.Options).
type GCOptions = gc.Options

// GCStore reports one store (gc.StoreResult).
type GCStore = gc.StoreResult

// GCResult reports a garbage collection (gc.Result) and its stages:
// fetch (every Git remote, before a shared store is collected), mark
// (items: objects kept), record (the expiry record, with a retention
// window) and one sweep per store, named sweep:remote, sweep:local and
// sweep:cache (items: objects listed; bytes_out: bytes deleted, objects
// and debris).
type GCResult struct {
	*gc.Result
	Stages []Stage `json:"stages"`
}

// GCExpire reports a retention window's cut (gc.ExpireReport).
type GCExpire = gc.ExpireReport

// GC deletes objects that no commit reachable from any ref (or a reflog
// entry younger than the grace period) references, and that are older than
// the grace period, and the debris of interrupted writes older than that.
// It holds the repository lock, so commits in this repository wait.
//
// In the configured store it also keeps every chunk that the other
// repositories in the store's registry reference (see gc.Others), and it
// refuses, deleting nothing, when it cannot know them all (ErrUnknownRepos)
// or when the grace period is below MinSharedGrace while others are
// registered and Force is not set (ErrShortGrace): their commits in flight
// are protected by the grace period only.
func (r *Repo) GC(ctx context.Context, opt GCOptions) (*GCResult, error) {
	unlock, err := r.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	if opt.Want("remote") && !r.storeInfo.Trusted {
		return nil, r.untrustedError(r.storeInfo) // nothing of an untrusted store is read or deleted
	}
	clock := startStages()
	clock.watch(r.Store)
	var others []RepoEntry
	if opt.Want("remote") {
		if others, err = r.registered(ctx, opt); err != nil {
			return nil, err
		}
	}
	if !opt.NoFetch && r.read.Local != r.Store && opt.Want("remote") {
		if err := r.fetchAll(ctx); err != nil {
			return nil, fmt.Errorf("gc needs every remote's commits before it collects the shared store %s: %w (use --no-fetch to skip)", r.Store, err)
		}
		clock.lap("fetch", 0, 0, 0)
	}
	now := time.Now()
	since := now.Add(-opt.Grace)
	window, cut, err := r.retention(opt, now)
	if err != nil {
		return nil, err
	}
	live, exp, err := gc.Live(r.git, since, cut)
	if err != nil {
		return nil, err
	}
	if err := gc.Others(r.git, openOther, r.Store, others, since, cut, live); err != nil {
		return nil, err
	}
	// Working files reference their layout and chunks through the stat
	// cache (a checkout of a version no ref names any more still reads
	// from them); keep those layouts too. Unless DryRun, prune the block
	// cache to the working files' versions.
	current := map[hashing.ID]bool{}
	for _, e := range r.loadStatCache().Entries {
		if !e.Layout.IsZero() {
			live[e.Layout] = reach.Use{}
		}
		current[e.Digest] = true
	}
	if !opt.DryRun {
		r.pruneBlocks(current)
	}
	clock.lap("mark", int64(len(live)), 0, 0)
	var report *gc.ExpireReport
	if exp != nil {
		report = gc.Report(exp, window)
		if !opt.DryRun {
			// Recorded before anything is deleted: a gc stopped midway
			// still explains the chunks it removed.
			if report.Record, err = r.recordExpiry(ctx, opt, gc.NewRecord(exp, window, opt.ExpireTags, now)); err != nil {
				return nil, err
			}
			clock.lap("record", 1, 0, 0)
		}
	}
	res := &GCResult{Result: &gc.Result{DryRun: opt.DryRun, Referenced: len(live), OtherRepos: len(others), Expire: report}}
	for _, t := range r.gcTargets(opt) { // one at a time, to time each
		one, err := gc.Run(ctx, opt, live, len(others), []gc.Target{t})
		if err != nil {
			return nil, err
		}
		st := one.Stores[0]
		res.Stores = append(res.Stores, st)
		clock.lap("sweep:"+t.Name, int64(st.Objects), 0, st.BytesDeleted+st.DebrisBytes)
	}
	res.Stages = clock.stages
	return res, nil
}

// retention returns the window opt asks for (or the configured one) and
// the cut it gives at now; a nil cut when there is none.
func (r *Repo) retention(opt GCOptions, now time.Time) (string, *gc.Cut, error) {
	window := opt.Expire
	if window == "" {
		window = r.Config.Retention
	}
	if window == "" || window == "none" {
		return "", nil, nil
	}
	d, err := ParseRetention(window)
	if err != nil {
		return "", nil, err
	}
	return window, &gc.Cut{Before: now.Add(-d), ExpireTags: opt.ExpireTags}, nil
}

// recordExpiry writes rec into each store gc collects that can lose
// chunks of this repository's commits for good (the configured store and
// the embedded one, not the read cache), and returns the first name.
func (r *Repo) recordExpiry(ctx context.Context, opt GCOptions, rec *gc.Record) (string, error) {
	var first string
	for _, t := range r.gcTargets(opt) {
		if t.Name == "cache" {
			continue
		}
		name, err := gc.PutRecord(ctx, t.Store, rec)
		if err != nil {
			return "", err
		}
		if first == "" {
			first = name
		}
	}
	return first, nil
}

// gcTargets returns the stores opt selects, each once.
func (r *Repo) gcTargets(opt GCOptions) []gc.Target {
	var targets []gc.Target
	if opt.Want("remote") {
		targets = append(targets, gc.Target{Name: "remote", Store: r.Store})
	}
	if opt.Want("local") && r.read.Local != r.Store {
		targets = append(targets, gc.Target{Name: "local", Store: r.read.Local})
	}
	if opt.Want("cache") && r.read.Cache != nil {
		targets = append(targets, gc.Target{Name: "cache", Store: r.read.Cache})
	}
	return targets
}

// fetchAll fetches every configured Git remote.
func (r *Repo) fetchAll(ctx context.Context) error {
	remotes, err := r.git.Remotes()
	if err != nil {
		return err
	}
	for _, rm := range remotes {
		if _, err := r.Fetch(ctx, rm.Name); err != nil {
			return err
		}
	}
	return nil
}

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
