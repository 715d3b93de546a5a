package gitdb

import (
	"os/exec"
	"testing"
	"time"
)

// The forms git reads in GIT_*_DATE give the instant git records.
func TestParseGitDate(t *testing.T) {
	want := time.Date(2026, 11, 5, 22, 13, 13, 0, time.UTC)
	for _, v := range []string{
		"1793916793 +0000", "@1793916793", "1793916793", "1793916793 +0200",
		"2026-11-05T22:13:13Z", "2026-11-06T00:13:13+02:00", "2026-11-05 22:13:13 +0000",
		"Thu, 05 Nov 2026 23:13:13 +0100",
	} {
		got, err := parseGitDate(v)
		if err != nil || !got.Equal(want) {
			t.Errorf("%q: %v, %v; want %v", v, got, err, want)
		}
	}
	if _, err := parseGitDate("last tuesday"); err == nil {
		t.Error("a date git's approxidate reads but we do not must be an error, not now")
	}
}

// A commit made with GIT_AUTHOR_DATE and GIT_COMMITTER_DATE set carries
// them, as git's own would.
func TestCommitTakesEnvDates(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir, _ := newRepo(t)
	g, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_AUTHOR_NAME", "Ann")
	t.Setenv("GIT_AUTHOR_EMAIL", "ann@example.com")
	t.Setenv("GIT_AUTHOR_DATE", "1700000000 +0100")
	t.Setenv("GIT_COMMITTER_DATE", "2026-11-05T22:13:13Z")
	blobs, err := g.writeBlobs(map[string][]byte{"dated.txt": []byte("x\n")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Commit("dated", blobs, nil, Settle{}); err != nil {
		t.Fatal(err)
	}
	got := git(t, dir, "log", "-1", "--format=%at %ai|%ct")
	if got != "1700000000 2023-11-14 23:13:20 +0100|1793916793" {
		t.Fatalf("git log says %q", got)
	}
	git(t, dir, "fsck", "--strict")
}
