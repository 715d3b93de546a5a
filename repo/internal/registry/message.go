package registry

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// CheckGrace refuses a grace period below MinSharedGrace, unless force,
// when others (entries of other repositories) use store st: the error
// wraps ErrShortGrace.
func CheckGrace(grace time.Duration, force bool, st fmt.Stringer, others []Entry) error {
	if len(others) == 0 || grace >= MinSharedGrace || force {
		return nil
	}
	return fmt.Errorf("%w: --grace %v is below %v on store %s, which %d other repositories use (%s): a commit in flight in one of them has stored chunks its registry entry does not name yet; use a longer --grace, or --force if none of them is committing or pushing now",
		ErrShortGrace, brief(grace), brief(MinSharedGrace), st, len(others), shortIDs(others))
}

// Unknown is gc's refusal on store st, wrapping ErrUnknownRepos, when it
// cannot read the commits of some repositories: each of unknown is a
// Describe of one.
func Unknown(st fmt.Stringer, unknown []string) error {
	if len(unknown) == 0 {
		return nil
	}
	return fmt.Errorf("%w: store %s is shared with repositories whose commits this gc cannot read, so it cannot tell their chunks from garbage:\n  %s\n"+
		"Push their commits and fetch them here, or run gc where their work trees are readable; retire a repository that no longer exists with: chunkvc store forget ID",
		ErrUnknownRepos, st, strings.Join(unknown, "\n  "))
}

// Describe names a registry entry for a refusal: id, where its Git was,
// its remotes, its tips and when they were recorded, and why gc cannot
// use it.
func Describe(e Entry, why string) string {
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
func shortIDs(es []Entry) string {
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
