package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// chunkvc's commits are in git's reflogs, as git's own are, and git fsck
// finds nothing wrong with them.
func TestCommitsAreInTheReflog(t *testing.T) {
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "*.bin")
	var ids []string
	for i, msg := range []string{"first version", "second version\n\nwith a body"} {
		r.write("a.bin", randomBytes(200<<10, int64(i)))
		var c commitResult
		r.jsonOf(&c, "commit", "-m", msg)
		ids = append(ids, c.Commit)
	}
	want := ids[1] + " commit: second version\n" + ids[0] + " commit (initial): first version\n"
	for _, ref := range []string{"main", "HEAD"} {
		if got := r.git("reflog", "show", "--format=%H %gs", ref); got != want {
			t.Errorf("git reflog %s:\n%s\nwant:\n%s", ref, got, want)
		}
	}
	r.git("fsck", "--strict", "--no-dangling")
}

// A branch whose ref file was left empty (a crash in a writer that
// rewrites refs in place) is refused, exit 4, with the value to restore;
// no commit starts a new root that would cut the history.
func TestBrokenBranchRefIsRefused(t *testing.T) {
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "*.bin")
	for i := range 3 {
		r.write("a.bin", randomBytes(100<<10, int64(i)))
		r.cv("commit", "-q", "-m", "v")
	}
	tip := strings.TrimSpace(r.git("rev-parse", "main"))
	for _, content := range []string{"", "deadbeef\n"} {
		if err := os.WriteFile(r.path(".git/refs/heads/main"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		r.write("a.bin", randomBytes(100<<10, 99))
		res := r.run(binary, "commit", "-m", "after the crash")
		if res.code != exitRefused || !strings.Contains(res.stderr, "broken") || !strings.Contains(res.stderr, tip) {
			t.Fatalf("commit on a broken ref (%q): exit %d\n%s", content, res.code, res.stderr)
		}
		for _, cmd := range [][]string{{"status"}, {"log"}} {
			if res := r.run(binary, cmd...); res.code == 0 {
				t.Errorf("%s on a broken ref succeeded:\n%s", cmd[0], res.stdout)
			}
		}
	}
	// The repair the message gives.
	if err := os.Remove(r.path(".git/refs/heads/main")); err != nil {
		t.Fatal(err)
	}
	r.git("update-ref", "refs/heads/main", tip)
	r.cv("commit", "-q", "-m", "after the repair")
	if n := strings.Count(r.git("log", "--format=%H"), "\n"); n != 4 {
		t.Errorf("history has %d commits, want 4", n)
	}
	// A ref naming an object that is not there is refused as well.
	if err := os.WriteFile(r.path(".git/refs/heads/main"), []byte(strings.Repeat("ab", 20)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.write("a.bin", randomBytes(100<<10, 100))
	if res := r.run(binary, "commit", "-m", "x"); res.code != exitRefused {
		t.Errorf("commit on a ref naming a missing commit: exit %d\n%s", res.code, res.stderr)
	}
}

// cloneJSON mirrors clone --json.
type cloneJSON struct {
	Branch       string `json:"branch"`
	BranchChosen bool   `json:"branch_chosen"`
}

// A bare remote made by plain `git init --bare` names master in its HEAD;
// when only main was pushed, clone (eager and lazy) checks out main and
// says so, as git clone would have had it been told --branch main.
func TestCloneBareRemoteWithDanglingHead(t *testing.T) {
	a := newRunner(t)
	bare := filepath.Join(t.TempDir(), "origin.git")
	a.git("init", "-q", "--bare", "--initial-branch=master", bare)
	a.git("init", "-q", "-b", "main")
	a.cv("init", "--store", filepath.Join(t.TempDir(), "chunks"))
	a.cv("track", "*.bin")
	data := randomBytes(300<<10, 7)
	a.write("a.bin", data)
	a.cv("commit", "-q", "-m", "v1")
	a.git("remote", "add", "origin", bare)
	a.cv("push")

	for _, args := range [][]string{{"clone"}, {"clone", "--lazy"}, {"clone", "--branch", "main"}} {
		b := newRunner(t)
		var res cloneJSON
		b.jsonOf(&res, append(args, "--trust-store", bare, "c")...)
		if res.Branch != "main" || res.BranchChosen == (len(args) == 3) {
			t.Errorf("%v: %+v", args, res)
		}
		b.dir = filepath.Join(b.dir, "c")
		if got := strings.TrimSpace(b.git("rev-parse", "--abbrev-ref", "HEAD")); got != "main" {
			t.Errorf("%v: HEAD is %s", args, got)
		}
		if len(args) == 2 {
			b.cv("checkout", "--", "a.bin")
		}
		if !bytes.Equal(b.read("a.bin"), data) {
			t.Errorf("%v: a.bin differs", args)
		}
		b.cv("status") // the clone is a working chunkvc repository
	}

	// Text output names the choice.
	b := newRunner(t)
	if res := b.run(binary, "clone", "--trust-store", bare, "c"); res.code != 0 || !strings.Contains(res.stderr, "checked out main") {
		t.Errorf("clone: exit %d\n%s", res.code, res.stderr)
	}

	// Two branches and neither main nor master: the user must choose.
	a.git("branch", "-m", "main", "dev")
	a.git("branch", "feature")
	a.git("push", "-q", "origin", "dev", "feature")
	a.git("--git-dir", bare, "update-ref", "-d", "refs/heads/main")
	c := newRunner(t)
	res := c.run(binary, "clone", "--trust-store", bare, "c")
	if res.code == 0 || !strings.Contains(res.stderr, "--branch") || !strings.Contains(res.stderr, "dev, feature") {
		t.Errorf("clone with two branches and no main: exit %d\n%s", res.code, res.stderr)
	}
}

// push, fetch and pull move refs through git: each move is in a reflog.
func TestRemoteRefMovesAreLogged(t *testing.T) {
	a := newRunner(t)
	bare := filepath.Join(t.TempDir(), "origin.git")
	a.git("init", "-q", "--bare", "-b", "main", bare)
	a.git("init", "-q", "-b", "main")
	a.cv("init", "--store", filepath.Join(t.TempDir(), "chunks"))
	a.cv("track", "*.bin")
	a.write("a.bin", randomBytes(100<<10, 1))
	a.cv("commit", "-q", "-m", "v1")
	a.git("remote", "add", "origin", bare)
	a.cv("push")
	b := newRunner(t)
	b.cv("clone", "--trust-store", bare, "c")
	b.dir = filepath.Join(b.dir, "c")

	a.write("a.bin", randomBytes(100<<10, 2))
	a.cv("commit", "-q", "-m", "v2")
	var p pushResult
	a.jsonOf(&p, "push")
	if !p.GitPushed {
		t.Fatalf("push: %+v", p)
	}
	if got := a.git("reflog", "show", "--format=%gs", "refs/remotes/origin/main"); !strings.Contains(got, "update by push") {
		t.Errorf("reflog of origin/main after push: %q", got)
	}
	a.jsonOf(&p, "push")
	if p.GitPushed {
		t.Errorf("a push with nothing new says it pushed: %+v", p)
	}

	var f struct{ Updated bool }
	out := b.cv("fetch", "--json")
	if err := json.Unmarshal([]byte(out), &f); err != nil || !f.Updated {
		t.Errorf("fetch: %v %s", err, out)
	}
	b.cv("pull")
	tip := strings.TrimSpace(a.git("rev-parse", "main"))
	if got := b.git("reflog", "show", "-1", "--format=%H %gs", "main"); !strings.HasPrefix(got, tip+" ") || !strings.Contains(got, "Fast-forward") {
		t.Errorf("reflog of main after pull: %q", got)
	}
	if !bytes.Equal(b.read("a.bin"), a.read("a.bin")) {
		t.Error("pull did not bring v2")
	}
	b.git("fsck", "--strict", "--no-dangling")
}

// install changes .git/config through git: the user's own lines and
// comments stay as they were.
func TestInstallKeepsGitConfig(t *testing.T) {
	r := newRunner(t)
	r.cv("init")
	cfg := r.path(".git/config")
	old, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mine := "# my settings, keep them\n[alias]\n\tst = status # short\n"
	if err := os.WriteFile(cfg, append(old, mine...), 0o644); err != nil {
		t.Fatal(err)
	}
	r.cv("install")
	got, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(got, []byte(mine)) || !bytes.Contains(got, []byte("diff-textconv")) {
		t.Errorf(".git/config after install:\n%s", got)
	}
}

// Working files that hold a stored version are not "uncommitted changes",
// even when the stat cache never saw them (a checkout killed after it
// wrote them, before it saved the cache): HEAD's version may be replaced
// by another, and so may the version a pull started from when the pull
// stopped after git moved HEAD.
func TestStoredVersionsAreNotLocalChanges(t *testing.T) {
	a := newRunner(t)
	bare := filepath.Join(t.TempDir(), "origin.git")
	a.git("init", "-q", "--bare", "-b", "main", bare)
	a.git("init", "-q", "-b", "main")
	a.cv("init", "--store", filepath.Join(t.TempDir(), "chunks"))
	a.cv("track", "*.bin")
	for i := range 2 {
		a.write("a.bin", randomBytes(300<<10, int64(i)))
		a.cv("commit", "-q", "-m", fmt.Sprint("v", i))
	}
	a.git("remote", "add", "origin", bare)
	a.cv("push", "-q")
	b := newRunner(t)
	b.cv("clone", "-q", "--trust-store", bare, "c")
	b.dir = b.path("c")
	forget := func() {
		if err := os.Remove(b.path(".git/chunkvc/statcache")); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	forget()
	b.cv("checkout", "-q", "HEAD~1", "--", "a.bin") // HEAD's bytes, unknown to the cache
	if !bytes.Equal(b.read("a.bin"), randomBytes(300<<10, 0)) {
		t.Fatal("checkout HEAD~1 did not write v0")
	}
	b.cv("checkout", "-q", "--", "a.bin")

	a.write("a.bin", randomBytes(300<<10, 5))
	a.cv("commit", "-q", "-m", "v2")
	a.cv("push", "-q")
	forget()
	stopped := append([]string{}, b.env...)
	b.env = append(b.env, "CHUNKVC_FAILPOINT=pull-after-merge")
	if res := b.run(binary, "pull"); res.code == 0 {
		t.Fatal("pull with the failpoint succeeded")
	}
	b.env = stopped
	// As a checkout killed after it wrote a.bin, before it saved the
	// stat cache, leaves it: v2's bytes the cache never saw.
	b.write("a.bin", a.read("a.bin"))
	forget()
	// A second pull stopped the same way: HEAD moves on to v3.
	a.write("a.bin", randomBytes(300<<10, 6))
	a.cv("commit", "-q", "-m", "v3")
	a.cv("push", "-q")
	b.env = append(b.env, "CHUNKVC_FAILPOINT=pull-after-merge")
	if res := b.run(binary, "pull"); res.code == 0 {
		t.Fatal("pull with the failpoint succeeded")
	}
	b.env = stopped
	b.cv("pull", "-q")
	if !bytes.Equal(b.read("a.bin"), a.read("a.bin")) {
		t.Fatal("the pull after stopped ones did not write v3")
	}
	if _, err := os.Stat(b.path(".git/chunkvc/pull-base")); !os.IsNotExist(err) {
		t.Errorf("pull-base left after a finished pull: %v", err)
	}
}

// Manifest entries left staged in the Git index by a commit that was never
// made (killed after it wrote the index, by an older chunkvc) do not ride
// along with the next commit: it records what the work tree holds.
func TestStaleStagedManifestsAreNotCommitted(t *testing.T) {
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "*.bin")
	r.write("a.bin", randomBytes(100<<10, 1))
	r.write("b.bin", randomBytes(100<<10, 2))
	r.cv("commit", "-q", "-m", "v1")
	bManifest := r.git("rev-parse", "HEAD:.chunkvc/manifests/b.bin")
	// What a killed commit of other versions left in the index.
	fake := func(text string) string {
		path := filepath.Join(t.TempDir(), "m")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(r.git("hash-object", "-w", path))
	}
	// One HEAD has that the index lacks: the index of the commit before,
	// where the branch moved and the index was not yet written.
	r.write("d.bin", randomBytes(100<<10, 4))
	r.cv("commit", "-q", "-m", "v1.5")
	dManifest := r.git("rev-parse", "HEAD:.chunkvc/manifests/d.bin")
	r.git("rm", "-q", "--cached", ".chunkvc/manifests/d.bin")
	r.git("update-index", "--cacheinfo", "100644,"+fake("not b's manifest\n")+",.chunkvc/manifests/b.bin")
	r.git("update-index", "--add", "--cacheinfo", "100644,"+fake("a file never committed\n")+",.chunkvc/manifests/c.bin")
	r.write("a.bin", randomBytes(100<<10, 3))
	r.cv("commit", "-q", "-m", "v2")
	if got := r.git("rev-parse", "HEAD:.chunkvc/manifests/b.bin"); got != bManifest {
		t.Errorf("b.bin's manifest in HEAD is %s, not the committed %s", got, bManifest)
	}
	if got := r.git("rev-parse", "HEAD:.chunkvc/manifests/d.bin"); got != dManifest {
		t.Errorf("d.bin's manifest in HEAD is %s, not the committed %s", got, dManifest)
	}
	if res := r.run("git", "rev-parse", "-q", "--verify", "HEAD:.chunkvc/manifests/c.bin"); res.code == 0 {
		t.Error("a manifest staged for a file that does not exist was committed")
	}
	if out := r.git("status", "--porcelain"); out != "" {
		t.Errorf("git status after the commit:\n%s", out)
	}
	r.cv("fsck")
}
