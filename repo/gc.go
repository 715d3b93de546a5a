package repo

import (
	"context"
	"fmt"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
)

// GCOptions configures GC.
type GCOptions struct {
	DryRun bool
	// Grace spares objects younger than this (uploads of commits still in
	// flight elsewhere) and keeps commits a reflog entry of that age names.
	Grace  time.Duration
	Stores []string // which stores: "local", "remote", "cache"; empty = all
	// NoFetch skips fetching every Git remote before collecting a shared
	// store (whose chunks other clones' pushed commits may reference).
	NoFetch bool
	// Force allows a grace period below MinSharedGrace on a store that
	// other registered repositories use.
	Force bool
}

// GCStore reports one store.
type GCStore struct {
	Store        string `json:"store"`
	Objects      int    `json:"objects"`
	Kept         int    `json:"kept"`
	Young        int    `json:"young"` // unreferenced but within the grace period
	Deleted      int    `json:"deleted"`
	BytesDeleted int64  `json:"bytes_deleted"`
	// PacksMerged counts small packs folded into one (local stores).
	PacksMerged int `json:"packs_merged,omitempty"`
	// Debris counts what interrupted writes left (temp files, packs
	// without an index, uploads never completed) older than the grace
	// period: removed, or with DryRun to be removed.
	Debris      int   `json:"debris"`
	DebrisBytes int64 `json:"debris_bytes"`
}

// GCResult reports a garbage collection.
type GCResult struct {
	DryRun     bool `json:"dry_run"`
	Referenced int  `json:"referenced"`
	// OtherRepos counts the other repositories registered in the
	// configured store whose chunks were kept.
	OtherRepos int       `json:"other_repos"`
	Stores     []GCStore `json:"stores"`
}

// GC deletes objects that no commit reachable from any ref (or a reflog
// entry younger than the grace period) references, and that are older than
// the grace period, and the debris of interrupted writes older than that.
// It holds the repository lock, so commits in this repository wait.
//
// In the configured store it also keeps every chunk that the other
// repositories in the store's registry reference (see othersNeed), and it
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
	j := &gcJob{r: r, opt: opt}
	if j.want("remote") && !r.storeInfo.Trusted {
		return nil, r.untrustedError(r.storeInfo) // nothing of an untrusted store is read or deleted
	}
	var others []RepoEntry
	if j.want("remote") {
		if others, err = r.registered(ctx, opt); err != nil {
			return nil, err
		}
	}
	if !opt.NoFetch && r.read.Local != r.Store && j.want("remote") {
		if err := r.fetchAll(ctx); err != nil {
			return nil, fmt.Errorf("gc needs every remote's commits before it collects the shared store %s: %w (use --no-fetch to skip)", r.Store, err)
		}
	}
	if err := j.findNeeded(others); err != nil {
		return nil, err
	}
	res := &GCResult{DryRun: opt.DryRun, Referenced: len(j.need), OtherRepos: len(others)}
	j.cutoff = time.Now().Add(-opt.Grace)
	for _, t := range j.targets() {
		st, err := j.collect(ctx, t)
		if err != nil {
			return nil, err
		}
		res.Stores = append(res.Stores, st)
	}
	return res, nil
}

// gcJob is one GC: findNeeded finds what to keep, collect deletes the
// rest from each of the targets.
type gcJob struct {
	r      *Repo
	opt    GCOptions
	need   map[hashing.ID]chunkUse // the objects to keep
	cutoff time.Time               // objects modified after it are young
}

// gcTarget is a store to collect, by its GCOptions.Stores name.
type gcTarget struct {
	name string
	s    store.Store
}

// want reports whether opt.Stores selects the store called name.
func (j *gcJob) want(name string) bool {
	return len(j.opt.Stores) == 0 || contains(j.opt.Stores, name)
}

// findNeeded sets need: the objects of the commits reachable from any
// ref or a reflog entry within the grace period, those the other
// registered repositories need, and the layouts of working files. Unless
// DryRun it also prunes the block cache to the working files' versions.
func (j *gcJob) findNeeded(others []RepoEntry) error {
	r := j.r
	commits, err := r.git.Reachable()
	if err != nil {
		return err
	}
	extra, err := r.git.ReflogCommits(time.Now().Add(-j.opt.Grace))
	if err != nil {
		return err
	}
	commits = append(commits, extra...)
	need, err := r.referenced(commits)
	if err != nil {
		return err
	}
	if err := r.othersNeed(others, time.Now().Add(-j.opt.Grace), need); err != nil {
		return err
	}
	// Working files reference their layout and chunks through the stat
	// cache (a checkout of a version no ref names any more still reads
	// from them); keep those layouts too.
	current := map[hashing.ID]bool{}
	for _, e := range r.loadStatCache().Entries {
		if !e.Layout.IsZero() {
			need[e.Layout] = chunkUse{}
		}
		current[e.Digest] = true
	}
	if !j.opt.DryRun {
		r.pruneBlocks(current)
	}
	j.need = need
	return nil
}

// targets returns the selected stores, each once.
func (j *gcJob) targets() []gcTarget {
	r := j.r
	var targets []gcTarget
	if j.want("remote") {
		targets = append(targets, gcTarget{"remote", r.Store})
	}
	if j.want("local") && r.read.Local != r.Store {
		targets = append(targets, gcTarget{"local", r.read.Local})
	}
	if j.want("cache") && r.read.Cache != nil {
		targets = append(targets, gcTarget{"cache", r.read.Cache})
	}
	return targets
}

// collect deletes from t the objects not needed and not young, sweeps
// its debris and repacks it where it can, and reports what it found.
func (j *gcJob) collect(ctx context.Context, t gcTarget) (GCStore, error) {
	st := GCStore{Store: t.s.String()}
	var garbage []store.Info
	err := t.s.List(ctx, func(i store.Info) error {
		st.Objects++
		switch {
		case hasID(j.need, i.ID):
			st.Kept++
		case j.opt.Grace > 0 && (i.Modified.IsZero() || i.Modified.After(j.cutoff)):
			st.Young++
		default:
			garbage = append(garbage, i)
		}
		return nil
	})
	if err != nil {
		return st, err
	}
	if err := deleteAll(ctx, t.s, garbage, j.opt.DryRun); err != nil {
		return st, err
	}
	if sw, ok := t.s.(store.Sweeper); ok {
		d, err := sw.Sweep(ctx, j.cutoff, j.opt.DryRun)
		st.Debris, st.DebrisBytes = d.Files, d.Bytes
		if err != nil {
			return st, err
		}
	}
	if rp, ok := t.s.(store.Repacker); ok && !j.opt.DryRun {
		n, err := rp.Repack(ctx)
		if err != nil {
			return st, err
		}
		st.PacksMerged = n
	}
	for _, g := range garbage {
		st.Deleted++
		st.BytesDeleted += g.Size
	}
	return st, nil
}

// deleteAll deletes the garbage objects, all at once where the store can
// (a pack is rewritten once, not once per object).
func deleteAll(ctx context.Context, s store.Store, garbage []store.Info, dryRun bool) error {
	if dryRun || len(garbage) == 0 {
		return nil
	}
	ids := make([]hashing.ID, len(garbage))
	for i, g := range garbage {
		ids[i] = g.ID
	}
	if b, ok := s.(store.BulkRemover); ok {
		return b.DeleteMany(ctx, ids)
	}
	for _, id := range ids {
		if err := s.Delete(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

func hasID(m map[hashing.ID]chunkUse, id hashing.ID) bool {
	_, ok := m[id]
	return ok
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
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
