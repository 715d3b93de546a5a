package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/internal/miniotest"
)

// The registry commands, top-level until the store parent command hangs
// them as "store repos" and "store forget".
var (
	storeRepos  = []string{"store", "repos"}
	storeForget = []string{"store", "forget"}
)

// storeReposOf mirrors store repos --json.
type storeReposOf struct {
	Repos []struct {
		ID    string            `json:"id"`
		Root  string            `json:"root"`
		Tips  map[string]string `json:"tips"`
		This  bool              `json:"this"`
		Known string            `json:"known"`
	} `json:"repos"`
}

// gcShared mirrors gc --json.
type gcShared struct {
	OtherRepos int `json:"other_repos"`
	Stores     []struct {
		Store   string `json:"store"`
		Objects int    `json:"objects"`
		Deleted int    `json:"deleted"`
	} `json:"stores"`
}

// sharedPair makes two repositories, each with one commit of its own data,
// initialised with the same store.
func sharedPair(t *testing.T, storeURL string, extraEnv []string) (a, b *runner, va, vb []byte) {
	t.Helper()
	a, b = newRunner(t), newRunner(t)
	for i, r := range []*runner{a, b} {
		r.env = append(r.env, extraEnv...)
		r.cv("init", "-q", "--store", storeURL)
		r.cv("track", "*.bin")
		data := randomBytes(3<<20+i*12345, int64(70+i))
		r.write("data.bin", data)
		r.cv("commit", "-q", "-m", "only commit")
		if i == 0 {
			va = data
		} else {
			vb = data
		}
	}
	return a, b, va, vb
}

// restores fails unless r checks out data.bin at HEAD byte for byte, both
// through cat and through a fresh checkout of the working file.
func restores(t *testing.T, r *runner, want []byte, what string) {
	t.Helper()
	if res := r.run(binary, "cat", "HEAD:data.bin"); res.code != 0 || res.stdout != string(want) {
		t.Fatalf("%s: cat HEAD:data.bin: exit %d, %d bytes, want %d\n%s", what, res.code, len(res.stdout), len(want), res.stderr)
	}
	os.Remove(r.path("data.bin"))
	if res := r.run(binary, "checkout", "-q", "--force"); res.code != 0 {
		t.Fatalf("%s: checkout: exit %d\n%s", what, res.code, res.stderr)
	}
	if string(r.read("data.bin")) != string(want) {
		t.Fatalf("%s: checked-out file differs", what)
	}
}

// Issue 25, defect 7: two repositories initialised with the same store;
// gc --grace 0s in the second must not delete what the first's only
// commit needs. Without --force it refuses (the store is shared and the
// grace is below an hour); with it, it keeps the first's chunks (its Git
// is readable here) and still collects the second's own garbage.
func testSharedStoreGC(t *testing.T, storeURL string, env []string) {
	a, b, va, vb := sharedPair(t, storeURL, env)
	// Garbage of b's own: a version reset away, its reflog expired.
	b.write("data.bin", randomBytes(1<<20, 99))
	b.cv("commit", "-q", "-m", "thrown away")
	b.git("reset", "-q", "--hard", "HEAD~1")
	b.git("reflog", "expire", "--expire=now", "--all")
	b.cv("checkout", "-q", "--force")

	res := b.run(binary, "gc", "--grace", "0s")
	restores(t, a, va, "the first repository after gc --grace 0s in the second")
	if res.code != exitRefused || !strings.Contains(res.stderr, "--force") {
		t.Fatalf("gc --grace 0s on a shared store: exit %d, want %d asking for --force\n%s%s", res.code, exitRefused, res.stdout, res.stderr)
	}
	var g gcShared
	b.jsonOf(&g, "gc", "--grace", "0s", "--force")
	restores(t, a, va, "the first repository after gc --grace 0s --force in the second")
	restores(t, b, vb, "the second repository after its gc")
	if g.OtherRepos != 1 || g.Stores[0].Deleted == 0 {
		t.Fatalf("gc --force: %+v; want the other repository counted and the reset-away version deleted", g)
	}
	t.Logf("gc in the second repository: %+v", g)
	// And the first's gc keeps the second's chunks the same way.
	a.jsonOf(&g, "gc", "--grace", "0s", "--force")
	restores(t, b, vb, "the second repository after gc in the first")
	if g.Stores[0].Deleted != 0 {
		t.Fatalf("gc in the first repository deleted %d objects; nothing is garbage", g.Stores[0].Deleted)
	}
}

func TestSharedLocalStoreGC(t *testing.T) {
	testSharedStoreGC(t, filepath.Join(t.TempDir(), "shared-store"), nil)
}

func TestSharedS3StoreGC(t *testing.T) {
	srv := miniotest.Start(t)
	testSharedStoreGC(t, "s3://chunkvc-test/shared", srv.Env())
}

// A registered repository whose work tree is gone and whose commits this
// repository never fetched makes gc refuse, naming it, its work tree and
// its tips; one whose commits were pushed and fetched does not. After
// store forget, gc proceeds and collects what only the forgotten one used.
func TestGCRefusesUnknownRepoUntilForgotten(t *testing.T) {
	storeDir := filepath.Join(t.TempDir(), "shared-store")
	bare := filepath.Join(t.TempDir(), "origin.git")
	a, b, _, vb := sharedPair(t, storeDir, nil)
	a.git("init", "-q", "--bare", "-b", "main", bare)
	// pushed: a third repository whose commit reaches the shared remote.
	pushed := newRunner(t)
	pushed.cv("init", "-q", "--store", storeDir)
	pushed.cv("track", "*.bin")
	vp := randomBytes(2<<20, 80)
	pushed.write("data.bin", vp)
	pushed.cv("commit", "-q", "-m", "pushed")
	pushed.git("remote", "add", "origin", bare)
	pushed.cv("push", "-q")
	b.git("remote", "add", "origin", bare)

	aID := idOf(t, a)
	if err := os.RemoveAll(a.dir); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(pushed.dir); err != nil {
		t.Fatal(err)
	}
	res := b.run(binary, "gc", "--grace", "2h")
	if res.code != exitRefused || !strings.Contains(res.stderr, aID) || !strings.Contains(res.stderr, a.dir) ||
		!strings.Contains(res.stderr, "store forget") {
		t.Fatalf("gc with a registered repository gone: exit %d, want %d naming %s at %s and store forget\n%s%s",
			res.code, exitRefused, aID, a.dir, res.stdout, res.stderr)
	}
	if aID == "" {
		t.Fatal("the first repository has no id")
	}
	if strings.Contains(res.stderr, pushed.dir) {
		t.Errorf("gc named the repository whose commits it fetched:\n%s", res.stderr)
	}
	var reg storeReposOf
	b.jsonOf(&reg, storeRepos...)
	known := map[string]string{}
	for _, e := range reg.Repos {
		known[e.Root] = e.Known
	}
	if len(reg.Repos) != 3 || !reg.Repos[0].This || known[a.dir] != "unknown" || known[pushed.dir] != "fetched" {
		t.Fatalf("store repos: %+v; want 3, this one first, the gone one unknown, the pushed one fetched", reg)
	}
	if res := b.run(binary, append(storeForget, b.repoID(t))...); res.code != exitUsage {
		t.Errorf("store forget of this repository: exit %d, want %d", res.code, exitUsage)
	}
	b.cv(append(storeForget, aID[:8])...)
	var g gcShared
	b.jsonOf(&g, "gc", "--grace", "0s", "--force")
	if g.OtherRepos != 1 || g.Stores[0].Deleted == 0 {
		t.Fatalf("gc after store forget: %+v; want the pushed repository kept and the forgotten one's chunks deleted", g)
	}
	restores(t, b, vb, "this repository after gc")
	c := newRunner(t)
	c.cv("clone", "-q", "--trust-store", bare, "c")
	c.dir = c.path("c")
	if string(c.read("data.bin")) != string(vp) {
		t.Fatal("a clone of the pushed commit differs after gc")
	}
}

// idOf reads the id of the repository r from .git/chunkvc/id ("" if it
// has none).
func idOf(t *testing.T, r *runner) string {
	t.Helper()
	var f struct{ ID string }
	b, err := os.ReadFile(r.path(".git/chunkvc/id"))
	if err == nil {
		err = json.Unmarshal(b, &f)
	}
	if err != nil && !os.IsNotExist(err) {
		t.Fatalf("repository id of %s: %q, %v", r.dir, b, err)
	}
	return f.ID
}

// repoID returns the id of the repository r, as store repos says.
func (r *runner) repoID(t *testing.T) string {
	t.Helper()
	var reg storeReposOf
	r.jsonOf(&reg, storeRepos...)
	for _, e := range reg.Repos {
		if e.This {
			return e.ID
		}
	}
	t.Fatal("no entry for this repository")
	return ""
}

// The short-grace rule: below an hour gc asks for --force only when other
// repositories use the store.
func TestGCShortGraceOnSharedStoreNeedsForce(t *testing.T) {
	alone := newRunner(t)
	alone.cv("init", "-q", "--store", filepath.Join(t.TempDir(), "own-store"))
	alone.cv("track", "*.bin")
	alone.write("data.bin", randomBytes(100000, 1))
	alone.cv("commit", "-q", "-m", "v")
	alone.cv("gc", "-q", "--grace", "0s")

	_, b, _, _ := sharedPair(t, filepath.Join(t.TempDir(), "shared-store"), nil)
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"--grace", "59m"}, exitRefused},
		{[]string{"--grace", "0s", "--dry-run"}, exitRefused},
		{[]string{"--grace", "1h"}, 0},
		{[]string{"--grace", "59m", "--force"}, 0},
	} {
		res := b.run(binary, append([]string{"gc", "-q"}, c.args...)...)
		if res.code != c.code {
			t.Errorf("gc %v on a shared store: exit %d, want %d\n%s", c.args, res.code, c.code, res.stderr)
		}
	}
}

// Every copy and clone has its own id; a moved repository keeps its own,
// and so does one reached through a symbolic link.
func TestRepoIDsOfCopiesAndMoves(t *testing.T) {
	storeDir := filepath.Join(t.TempDir(), "shared-store")
	a, _, va, _ := sharedPair(t, storeDir, nil)
	id := a.repoID(t)
	parent := t.TempDir()
	cp := &runner{t: t, dir: filepath.Join(parent, "copy"), env: a.env}
	a.run("cp", "-a", a.dir, cp.dir)
	cp.write("data.bin", randomBytes(1<<20, 5))
	cp.cv("commit", "-q", "-m", "in the copy")
	if got := cp.repoID(t); got == id {
		t.Fatal("a copy made with cp -a kept the original's id")
	}
	if got := a.repoID(t); got != id {
		t.Fatalf("the original's id changed to %s after it was copied", got)
	}
	mv := &runner{t: t, dir: filepath.Join(parent, "moved"), env: a.env}
	if err := os.Rename(a.dir, mv.dir); err != nil {
		t.Fatal(err)
	}
	if got := mv.repoID(t); got != id {
		t.Fatalf("a moved repository took a new id %s", got)
	}
	// Reached through a symbolic link, it is the same repository.
	link := &runner{t: t, dir: filepath.Join(parent, "link"), env: a.env}
	if err := os.Symlink(mv.dir, link.dir); err != nil {
		t.Fatal(err)
	}
	if got := link.repoID(t); got != id {
		t.Fatalf("through a symbolic link the repository took a new id %s", got)
	}
	var reg storeReposOf
	mv.jsonOf(&reg, storeRepos...)
	if len(reg.Repos) != 3 || reg.Repos[0].Root != mv.dir {
		t.Fatalf("registry after a copy and a move: %+v", reg)
	}
	// gc in the copy keeps the moved original's chunks (its Git is read
	// where it now is).
	cp.cv("gc", "-q", "--grace", "0s", "--force")
	restores(t, mv, va, "the moved repository after gc in its copy")
	out, _ := json.Marshal(reg)
	t.Logf("%s", out)
}
