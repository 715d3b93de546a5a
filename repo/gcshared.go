package repo

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
)

// registered records this repository in the configured store's registry
// and returns the other repositories registered there. It refuses a grace
// period below MinSharedGrace when there are any, unless opt.Force.
func (r *Repo) registered(ctx context.Context, opt GCOptions) ([]RepoEntry, error) {
	self, err := r.register(ctx, r.Store)
	if err != nil {
		return nil, err
	}
	entries, err := registry(ctx, r.Store)
	if err != nil {
		return nil, err
	}
	var others []RepoEntry
	for _, e := range entries {
		if e.ID != self {
			others = append(others, e)
		}
	}
	if len(others) > 0 && opt.Grace < MinSharedGrace && !opt.Force {
		return nil, fmt.Errorf("%w: --grace %v is below %v on store %s, which %d other repositories use (%s): a commit in flight in one of them has stored chunks its registry entry does not name yet; use a longer --grace, or --force if none of them is committing or pushing now",
			ErrShortGrace, brief(opt.Grace), brief(MinSharedGrace), r.Store, len(others), shortIDs(others))
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
			unknown = append(unknown, describe(e, why))
			continue
		}
		for id, u := range got {
			if _, ok := need[id]; !ok {
				need[id] = u
			}
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("%w: store %s is shared with repositories whose commits this gc cannot read, so it cannot tell their chunks from garbage:\n  %s\n"+
			"Push their commits and fetch them here, or run gc where their work trees are readable; retire a repository that no longer exists with: chunkvc store forget ID",
			ErrUnknownRepos, r.Store, strings.Join(unknown, "\n  "))
	}
	return nil
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

// describe names a registry entry for a refusal: id, where its Git was,
// its remotes, its tips and when they were recorded, and why gc cannot
// use it.
func describe(e RepoEntry, why string) string {
	var tips []string
	for ref, h := range e.Tips {
		tips = append(tips, strings.TrimPrefix(ref, "refs/heads/")+"="+shortHash(h))
	}
	sort.Strings(tips)
	if len(tips) > 6 {
		tips = append(tips[:6], fmt.Sprintf("and %d more", len(tips)-6))
	}
	var remotes []string
	for n, u := range e.Remotes {
		remotes = append(remotes, n+"="+u)
	}
	sort.Strings(remotes)
	s := fmt.Sprintf("%s: %s on %s", e.ID, e.Root, e.Host)
	if len(remotes) > 0 {
		s += " (remotes " + strings.Join(remotes, ", ") + ")"
	}
	return fmt.Sprintf("%s, tips %s recorded %s: %s", s, strings.Join(tips, " "), e.Updated.Format(time.RFC3339), why)
}

func shortHash(h string) string {
	if len(h) > 10 {
		return h[:10]
	}
	return h
}

// shortIDs lists the ids of entries, for messages.
func shortIDs(es []RepoEntry) string {
	var ids []string
	for _, e := range es {
		ids = append(ids, e.ID)
	}
	if len(ids) > 5 {
		ids = append(ids[:5], "…")
	}
	return strings.Join(ids, ", ")
}

// brief writes d as a flag would take it: 1h, 59m, 90s rather than
// 1h0m0s.
func brief(d time.Duration) string {
	s := d.String()
	if d%time.Minute == 0 && d != 0 {
		s = strings.TrimSuffix(s, "0s")
	}
	if d%time.Hour == 0 && d != 0 {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
