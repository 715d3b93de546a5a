package repo

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/hashing"
)

// A Snapshot names the commit its rev resolved to, and the files tracked
// there, whatever commits come after.
func TestSnapshot(t *testing.T) {
	v1, v2 := randomData(200000, 21), randomData(200000, 22)
	r := testRepo(t, v1)
	first, err := r.Snapshot("main")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.Root, "sub", "x.bin"), v2, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit(context.Background(), CommitOptions{Message: "v2"}); err != nil {
		t.Fatal(err)
	}
	revParse := func(rev string) string {
		out, err := exec.Command("git", "-C", r.Root, "rev-parse", rev).Output()
		if err != nil {
			t.Fatalf("git rev-parse %s: %v", rev, err)
		}
		return strings.TrimSpace(string(out))
	}
	for _, c := range []struct {
		snap *Snapshot
		rev  string
		data []byte
	}{
		{first, "HEAD~1", v1},
		{mustSnapshot(t, r, ""), "HEAD", v2},
		{mustSnapshot(t, r, "HEAD~1"), "HEAD~1", v1},
		{mustSnapshot(t, r, revParse("HEAD")), "HEAD", v2},
	} {
		if got, want := c.snap.Commit(), revParse(c.rev); got != want {
			t.Errorf("snapshot of %s: commit %s, want %s", c.rev, got, want)
		}
		m, ok, err := c.snap.Manifest("sub/x.bin")
		if err != nil || !ok || m.Path != "sub/x.bin" || m.Digest != hashing.Sum(c.data) {
			t.Errorf("snapshot of %s: manifest of sub/x.bin: %v, %v; want the one of its version", c.rev, ok, err)
		}
		for _, p := range []string{"sub", "x.bin", "sub/y.bin", ".chunkvc/config"} {
			if m, ok, err := c.snap.Manifest(p); m != nil || ok || err != nil {
				t.Errorf("snapshot of %s: manifest of untracked %s: %v, %v, %v", c.rev, p, m, ok, err)
			}
		}
	}
	if _, err := r.Snapshot("nobranch"); err == nil {
		t.Error("snapshot of an unknown rev succeeded")
	}
	empty, err := Init(t.TempDir(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := empty.Snapshot(""); !errors.Is(err, ErrNoCommits) {
		t.Errorf("snapshot of HEAD with no commits: %v, want ErrNoCommits", err)
	}
}

func mustSnapshot(t *testing.T, r *Repo, rev string) *Snapshot {
	t.Helper()
	s, err := r.Snapshot(rev)
	if err != nil {
		t.Fatalf("snapshot %q: %v", rev, err)
	}
	return s
}
