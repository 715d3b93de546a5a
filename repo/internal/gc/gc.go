package gc

import (
	"context"
	"slices"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/repo/internal/reach"
	"github.com/chunkvc/chunkvc/store"
)

// Options configures a collection.
type Options struct {
	DryRun bool
	// Grace spares objects younger than this (uploads of commits still in
	// flight elsewhere) and keeps commits a reflog entry of that age names.
	Grace  time.Duration
	Stores []string // which stores: "local", "remote", "cache"; empty = all
	// NoFetch skips fetching every Git remote before collecting a shared
	// store (whose chunks other clones' pushed commits may reference).
	NoFetch bool
	// Force allows a grace period below registry.MinSharedGrace on a
	// store that other registered repositories use.
	Force bool
	// Expire is a retention window ("30d", "12h", "2w"): commits older
	// than it lose the objects no kept commit shares. "" takes the
	// repository's configured retention; "none" applies no window.
	Expire string
	// ExpireTags lets tagged commits expire too.
	ExpireTags bool
}

// Want reports whether o.Stores selects the target called name.
func (o Options) Want(name string) bool {
	return len(o.Stores) == 0 || slices.Contains(o.Stores, name)
}

// StoreResult reports one store.
type StoreResult struct {
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

// Result reports a garbage collection.
type Result struct {
	DryRun     bool `json:"dry_run"`
	Referenced int  `json:"referenced"`
	// OtherRepos counts the other repositories registered in the
	// configured store whose chunks were kept.
	OtherRepos int           `json:"other_repos"`
	Stores     []StoreResult `json:"stores"`
	// Expire reports the retention window's cut; nil without one.
	Expire *ExpireReport `json:"expire,omitempty"`
}

// Target is a store to collect, by its Options.Stores name.
type Target struct {
	Name  string
	Store store.Store
}

// Run sweeps each target of everything live does not hold and that is
// older than the grace period, in order, and reports them; others is
// how many other repositories' chunks live holds.
func Run(ctx context.Context, opt Options, live reach.Set, others int, targets []Target) (*Result, error) {
	res := &Result{DryRun: opt.DryRun, Referenced: len(live), OtherRepos: others}
	cutoff := time.Now().Add(-opt.Grace)
	for _, t := range targets {
		st, err := sweep(ctx, opt, live, cutoff, t.Store)
		if err != nil {
			return nil, err
		}
		res.Stores = append(res.Stores, st)
	}
	return res, nil
}

// sweep deletes from s the objects not live and not young, sweeps its
// debris and repacks it where it can, and reports what it found.
func sweep(ctx context.Context, opt Options, live reach.Set, cutoff time.Time, s store.Store) (StoreResult, error) {
	st := StoreResult{Store: s.String()}
	var garbage []store.Info
	err := s.List(ctx, func(i store.Info) error {
		st.Objects++
		switch {
		case live.Has(i.ID):
			st.Kept++
		case opt.Grace > 0 && (i.Modified.IsZero() || i.Modified.After(cutoff)):
			st.Young++
		default:
			garbage = append(garbage, i)
		}
		return nil
	})
	if err != nil {
		return st, err
	}
	// Only a store that can be touched (store.Toucher) can see an object
	// grow young again between the two listings.
	if _, touchable := s.(store.Toucher); touchable && len(garbage) > 0 && opt.Grace > 0 && !opt.DryRun {
		if garbage, err = stillOld(ctx, s, garbage, cutoff, &st); err != nil {
			return st, err
		}
	}
	if err := deleteAll(ctx, s, garbage, opt.DryRun); err != nil {
		return st, err
	}
	if sw, ok := s.(store.Sweeper); ok {
		d, err := sw.Sweep(ctx, cutoff, opt.DryRun)
		st.Debris, st.DebrisBytes = d.Files, d.Bytes
		if err != nil {
			return st, err
		}
	}
	if rp, ok := s.(store.Repacker); ok && !opt.DryRun {
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

// stillOld lists s again, right before garbage is deleted, and returns
// the garbage still older than cutoff: a commit in another repository
// sharing the store may have reused an object since the first listing,
// touching it (store.Touch) to say so, and its commit would lose a chunk
// if gc deleted it. Stores with packs reload their indexes, and the ages
// of their packs, for the listing. What a touch after this listing saves
// is up to the grace period. An object gone from the second listing is
// neither deleted nor counted.
func stillOld(ctx context.Context, s store.Store, garbage []store.Info, cutoff time.Time, st *StoreResult) ([]store.Info, error) {
	type seen struct {
		modified time.Time
		listed   bool
	}
	now := make(map[hashing.ID]seen, len(garbage))
	for _, g := range garbage {
		now[g.ID] = seen{}
	}
	err := s.List(ctx, func(i store.Info) error {
		if _, ok := now[i.ID]; ok {
			now[i.ID] = seen{i.Modified, true}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	old := garbage[:0]
	for _, g := range garbage {
		switch n := now[g.ID]; {
		case !n.listed:
		case n.modified.IsZero() || n.modified.After(cutoff):
			st.Young++
		default:
			old = append(old, g)
		}
	}
	return old, nil
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
