package gc

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
	"github.com/chunkvc/chunkvc/repo/internal/reach"
	"github.com/chunkvc/chunkvc/repo/internal/registry"
)

// Git is what gc reads of a repository's Git: its commits and their
// manifests.
type Git interface {
	reach.Manifests
	Reachable() ([]*gitdb.Commit, error)
	ReflogCommits(since time.Time) ([]*gitdb.Commit, error)
	History(tips []gitdb.Hash) ([]*gitdb.Commit, error)
	ReadCommit(h gitdb.Hash) (*gitdb.Commit, error)
	// Tips maps each branch, tag and remote-tracking ref (and HEAD when
	// detached) to the commit it names, tags peeled.
	Tips() (map[string]string, error)
}

// Opener opens the Git of the repository e describes at its recorded
// work tree, if it is there and still holds that repository (its id file
// names e.ID); nil otherwise.
type Opener func(e registry.Entry) Git

// Live returns the objects of the commits reachable from any ref of g or
// named by a reflog entry newer than since. With a cut (a retention
// window), commits older than the cut that no kept ref names are left
// out of that set, and the Expiry lists them; without one it is nil.
func Live(g Git, since time.Time, cut *Cut) (reach.Set, *Expiry, error) {
	commits, err := g.Reachable()
	if err != nil {
		return nil, nil, err
	}
	extra, err := g.ReflogCommits(since)
	if err != nil {
		return nil, nil, err
	}
	commits = append(commits, extra...)
	var exp *Expiry
	if cut != nil {
		tips, err := g.Tips()
		if err != nil {
			return nil, nil, err
		}
		if commits, exp, err = expire(g, commits, *cut, tips); err != nil {
			return nil, nil, err
		}
	}
	live, err := reach.Referenced(g, commits)
	return live, exp, err
}

// Others adds to live every object that the other registered
// repositories reference. For each, in this order:
//   - its recorded work tree is readable and still holds it (open): every
//     commit reachable from its refs, its reflog entries newer than since,
//     and its recorded tips, read from its own Git;
//   - every recorded tip is in g (same remote, fetched): the commits
//     reachable from them;
//   - otherwise its chunks are unknown, and Others fails, naming every
//     such repository with where it was and its tips, and how to retire
//     one that no longer exists (registry.Unknown, about st). Nothing is
//     deleted then.
//
// A cut (the retention window) applies to their commits as to this
// repository's, each keeping its own tips: the window is committed
// configuration, shared by every clone, and a clone that kept all its
// history would otherwise keep every expired chunk of a shared store.
func Others(g Git, open Opener, st fmt.Stringer, others []registry.Entry, since time.Time, cut *Cut, live reach.Set) error {
	var unknown []string
	for _, e := range others {
		got, why := otherReferenced(g, open, e, since, cut)
		if why != "" {
			unknown = append(unknown, registry.Describe(e, why))
			continue
		}
		for id, u := range got {
			if _, ok := live[id]; !ok {
				live[id] = u
			}
		}
	}
	return registry.Unknown(st, unknown)
}

// otherReferenced returns the objects repository e references, or why
// they cannot be known.
func otherReferenced(g Git, open Opener, e registry.Entry, since time.Time, cut *Cut) (reach.Set, string) {
	if o := open(e); o != nil {
		commits, err := o.Reachable()
		if err != nil {
			return nil, fmt.Sprintf("reading its Git at %s failed: %v", e.Root, err)
		}
		extra, err := o.ReflogCommits(since)
		if err != nil {
			return nil, fmt.Sprintf("reading its reflogs at %s failed: %v", e.Root, err)
		}
		commits = append(commits, extra...)
		// Recorded tips it still has (a branch reset since): kept too.
		var tips []gitdb.Hash
		for _, h := range e.Tips {
			if _, err := o.ReadCommit(gitdb.HashOf(h)); err == nil {
				tips = append(tips, gitdb.HashOf(h))
			}
		}
		more, err := o.History(tips)
		if err != nil {
			return nil, fmt.Sprintf("reading its history at %s failed: %v", e.Root, err)
		}
		commits = append(commits, more...)
		if cut != nil {
			now, err := o.Tips()
			if err != nil {
				return nil, fmt.Sprintf("reading its refs at %s failed: %v", e.Root, err)
			}
			for _, h := range tips { // recorded tips it still has
				now["recorded "+h.String()] = h.String()
			}
			if commits, _, err = expire(o, commits, *cut, now); err != nil {
				return nil, fmt.Sprintf("reading its tips at %s failed: %v", e.Root, err)
			}
		}
		need, err := reach.Referenced(o, commits)
		if err != nil {
			return nil, fmt.Sprintf("reading its manifests at %s failed: %v", e.Root, err)
		}
		return need, ""
	}
	if missing := MissingTips(g, e); len(missing) > 0 {
		return nil, fmt.Sprintf("its work tree is not readable here (gone, or on another host) and this repository lacks its tips %s", strings.Join(missing, ", "))
	}
	var tips []gitdb.Hash
	for _, h := range e.Tips {
		tips = append(tips, gitdb.HashOf(h))
	}
	commits, err := g.History(tips)
	if err == nil && cut != nil {
		commits, _, err = expire(g, commits, *cut, e.Tips)
	}
	if err == nil {
		var need reach.Set
		if need, err = reach.Referenced(g, commits); err == nil {
			return need, ""
		}
	}
	return nil, fmt.Sprintf("reading its tips in this repository failed: %v", err)
}

// MissingTips returns e's tips whose commits g lacks, sorted.
func MissingTips(g Git, e registry.Entry) []string {
	var out []string
	for ref, h := range e.Tips {
		if _, err := g.ReadCommit(gitdb.HashOf(h)); err != nil || len(h) != 40 {
			out = append(out, ref)
		}
	}
	sort.Strings(out)
	return out
}
