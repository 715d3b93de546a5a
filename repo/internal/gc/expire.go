package gc

import (
	"sort"
	"strings"
	"time"

	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
)

// Cut is a retention window applied to the mark: a commit committed
// before Before expires unless a kept ref names it.
type Cut struct {
	Before time.Time
	// ExpireTags lets tags expire too; otherwise every tag's commit is
	// kept whatever its age.
	ExpireTags bool
}

// Expiry is what a Cut did to the mark.
type Expiry struct {
	Before time.Time
	// Tips are the refs kept whatever their age (branches,
	// remote-tracking refs, tags unless Cut.ExpireTags, and HEAD when
	// detached), each with the commit it names.
	Tips map[string]string
	// Refs are all the refs at the cut, kept or not (tags with
	// Cut.ExpireTags): the history that existed then.
	Refs map[string]string
	// Expired are the commits the mark left out, oldest first.
	Expired []*gitdb.Commit
	// Kept counts the commits whose objects the mark keeps.
	Kept int
}

// expire splits commits (reachable ones and those of recent reflog
// entries, possibly repeated) by cut: a commit stays when a kept ref of
// tips (ref -> commit, as Git.Tips gives them) names it or it was
// committed at or after cut.Before. A tip the walk did not reach (a ref
// to an annotated tag) is read from g and added. The reflog does not
// protect an old commit here: the window, not the grace period, says how
// long history stays readable.
func expire(g Git, commits []*gitdb.Commit, cut Cut, tips map[string]string) ([]*gitdb.Commit, *Expiry, error) {
	exp := &Expiry{Before: cut.Before, Tips: map[string]string{}, Refs: tips}
	tip := map[string]bool{}
	for ref, h := range tips {
		if cut.ExpireTags && strings.HasPrefix(ref, "refs/tags/") {
			continue
		}
		exp.Tips[ref] = h
		tip[h] = true
	}
	seen := map[gitdb.Hash]bool{}
	var kept []*gitdb.Commit
	for _, c := range commits {
		if seen[c.Hash] {
			continue
		}
		seen[c.Hash] = true
		if tip[c.Hash.String()] || !c.Committer.When.Before(cut.Before) {
			kept = append(kept, c)
		} else {
			exp.Expired = append(exp.Expired, c)
		}
	}
	for h := range tip {
		if seen[gitdb.HashOf(h)] {
			continue
		}
		c, err := g.ReadCommit(gitdb.HashOf(h))
		if err != nil {
			return nil, nil, err
		}
		kept = append(kept, c)
	}
	sort.Slice(exp.Expired, func(i, j int) bool {
		return exp.Expired[i].Committer.When.Before(exp.Expired[j].Committer.When)
	})
	exp.Kept = len(kept)
	return kept, exp, nil
}

// ExpireReport is the part of a Result a retention window adds.
type ExpireReport struct {
	Window string    `json:"window"`
	Cut    time.Time `json:"cut"`
	// CommitsExpired and CommitsKept count the commits the mark left out
	// and kept.
	CommitsExpired int `json:"commits_expired"`
	CommitsKept    int `json:"commits_kept"`
	// Record names the expiry record written (see Record); empty with
	// DryRun.
	Record  string          `json:"record,omitempty"`
	Commits []ExpiredCommit `json:"commits"`
}

// ExpiredCommit is one commit a cut expired.
type ExpiredCommit struct {
	Commit  string    `json:"commit"`
	Date    time.Time `json:"date"`
	Subject string    `json:"subject"`
}

// Report describes exp, made with the window named window.
func Report(exp *Expiry, window string) *ExpireReport {
	rep := &ExpireReport{Window: window, Cut: exp.Before.UTC(), CommitsExpired: len(exp.Expired), CommitsKept: exp.Kept, Commits: []ExpiredCommit{}}
	for _, c := range exp.Expired {
		subject, _, _ := strings.Cut(c.Message, "\n")
		rep.Commits = append(rep.Commits, ExpiredCommit{Commit: c.Hash.String(), Date: c.Committer.When.UTC(), Subject: subject})
	}
	return rep
}
