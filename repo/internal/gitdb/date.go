package gitdb

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// envDate returns the time environment variable name (GIT_AUTHOR_DATE,
// GIT_COMMITTER_DATE) sets, as git reads it, or now when it is unset: a
// job replaying history, or a test of age-based rules (gc --expire), sets
// commit dates as it would with git.
func envDate(name string, now time.Time) (time.Time, error) {
	v := strings.TrimSpace(os.Getenv(name))
	if v == "" {
		return now, nil
	}
	t, err := parseGitDate(v)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s=%q: %w", name, v, err)
	}
	return t, nil
}

// parseGitDate reads the date forms git takes in GIT_*_DATE: its own
// "<unix seconds> <+hhmm>" (also with a leading '@', the zone optional),
// RFC 2822 and ISO 8601 (a 'T' or a space between date and time, a zone
// or UTC).
func parseGitDate(v string) (time.Time, error) {
	secs, zone, _ := strings.Cut(strings.TrimPrefix(v, "@"), " ")
	if n, err := strconv.ParseInt(secs, 10, 64); err == nil {
		t := time.Unix(n, 0).UTC()
		if zone == "" {
			return t, nil
		}
		if z, err := time.Parse("-0700", zone); err == nil {
			return t.In(z.Location()), nil
		}
	}
	for _, layout := range []string{
		time.RFC3339, "2006-01-02T15:04:05", "2006-01-02 15:04:05 -0700", "2006-01-02 15:04:05",
		time.RFC1123Z, "Mon, 2 Jan 2006 15:04:05 -0700", "2006-01-02",
	} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("not a date git reads (unix seconds and zone, RFC 2822 or ISO 8601)")
}
