package gitdb

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// gitEnv pins who git says made a change and when, so that chunkvc's
// reflog lines can be compared with git's byte for byte.
var gitEnv = []string{
	"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
	"GIT_AUTHOR_NAME=Ann Example", "GIT_AUTHOR_EMAIL=ann@example.com",
	"GIT_COMMITTER_NAME=Ann Example", "GIT_COMMITTER_EMAIL=ann@example.com",
	"GIT_AUTHOR_DATE=1700000000 +0100", "GIT_COMMITTER_DATE=1700000000 +0100",
}

var who = Ident{Name: "Ann Example", Email: "ann@example.com", When: time.Unix(1700000000, 0).In(time.FixedZone("", 3600))}

func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), gitEnv...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// newRepo makes a repository with two commits on main and returns its
// work tree and the commits' names, oldest first.
func newRepo(t testing.TB) (string, []Hash) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed: ", err)
	}
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	var hs []Hash
	for i, msg := range []string{"first", "second"} {
		os.WriteFile(filepath.Join(dir, "f"), []byte(msg), 0o644)
		git(t, dir, "add", "f")
		git(t, dir, "commit", "-q", "-m", msg)
		h, err := ParseHash(git(t, dir, "rev-parse", "HEAD"))
		if err != nil {
			t.Fatal(i, err)
		}
		hs = append(hs, h)
	}
	return dir, hs
}

func readFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// An update writes what `git update-ref -m` writes: the same ref file and
// the same reflog lines (the branch's and HEAD's), and git accepts it.
func TestUpdateMatchesGitUpdateRef(t *testing.T) {
	ours, hs := newRepo(t)
	theirs := t.TempDir()
	if out, err := exec.Command("cp", "-a", ours+"/.", theirs).CombinedOutput(); err != nil {
		t.Fatal(err, string(out))
	}
	git(t, theirs, "update-ref", "-m", "commit: back  to\nfirst", "refs/heads/main", hs[0].String(), hs[1].String())
	rs := NewRefs(filepath.Join(ours, ".git"))
	err := rs.Update(Update{Name: "refs/heads/main", Old: hs[1], New: hs[0], Message: "commit: back  to\nfirst", Who: who})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"refs/heads/main", "logs/refs/heads/main", "logs/HEAD"} {
		if a, b := readFile(t, filepath.Join(ours, ".git", p)), readFile(t, filepath.Join(theirs, ".git", p)); a != b {
			t.Errorf("%s differs from git's:\nours:  %q\ngit's: %q", p, a, b)
		}
	}
	if got := git(t, ours, "rev-parse", "main"); got != hs[0].String() {
		t.Errorf("git reads main as %s, want %s", got, hs[0])
	}
	if got := git(t, ours, "reflog", "-1", "--format=%H %gs"); got != hs[0].String()+" commit: back to first" {
		t.Errorf("git reflog: %q", got)
	}
	git(t, ours, "fsck", "--strict")
	if _, err := os.Stat(filepath.Join(ours, ".git", "refs", "heads", "main.lock")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lock left behind: %v", err)
	}
}

// A first commit creates the branch (old value zero) and its reflog.
func TestUpdateCreatesBranch(t *testing.T) {
	dir, hs := newRepo(t)
	rs := NewRefs(filepath.Join(dir, ".git"))
	if err := rs.Update(Update{Name: "refs/heads/topic/x", New: hs[0], Message: "branch: Created", Who: who}); err != nil {
		t.Fatal(err)
	}
	if got := git(t, dir, "rev-parse", "topic/x"); got != hs[0].String() {
		t.Errorf("topic/x = %s", got)
	}
	if got := git(t, dir, "reflog", "show", "--format=%gs", "topic/x"); got != "branch: Created" {
		t.Errorf("reflog of topic/x: %q", got)
	}
	// HEAD is on main, not topic/x: its reflog does not change.
	if n := len(strings.Split(readFile(t, filepath.Join(dir, ".git", "logs", "HEAD")), "\n")); n != 3 {
		t.Errorf("HEAD's reflog has %d lines, want the 2 of git's commits", n-1)
	}
}

// Compare-and-set: an update from a value the ref no longer holds, or
// while another writer holds the lock, changes nothing.
func TestUpdateRefusals(t *testing.T) {
	dir, hs := newRepo(t)
	gd := filepath.Join(dir, ".git")
	rs := NewRefs(gd)
	logBefore := readFile(t, filepath.Join(gd, "logs", "HEAD"))
	cases := []struct {
		name string
		u    Update
		pre  func()
		want error
	}{
		{"moved", Update{Name: "refs/heads/main", Old: hs[0], New: hs[0]}, nil, ErrRefMoved},
		{"exists", Update{Name: "refs/heads/main", New: hs[0]}, nil, ErrRefMoved},
		{"gone", Update{Name: "refs/heads/nope", Old: hs[0], New: hs[1]}, nil, ErrRefMoved},
		{"locked", Update{Name: "refs/heads/main", Old: hs[1], New: hs[0]}, func() {
			os.WriteFile(filepath.Join(gd, "refs", "heads", "main.lock"), nil, 0o644)
		}, ErrRefLocked},
		{"bad name", Update{Name: "refs/heads/../../x", Old: hs[1], New: hs[0]}, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.pre != nil {
				c.pre()
			}
			err := rs.Update(c.u)
			if err == nil || c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			if got := git(t, dir, "rev-parse", "main"); got != hs[1].String() {
				t.Errorf("main moved to %s", got)
			}
			if got := readFile(t, filepath.Join(gd, "logs", "HEAD")); got != logBefore {
				t.Errorf("reflog changed: %q", got)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(gd, "x")); err == nil {
		t.Error("a bad name wrote outside refs/")
	}
}

// A broken ref is an error for readers and writers, never "unborn", and
// the reflog tells what it last held.
func TestBrokenRefs(t *testing.T) {
	for _, content := range []string{"", "\n", "0123", "ref: ../../etc\n", strings.Repeat("z", 40) + "\n"} {
		dir, hs := newRepo(t)
		gd := filepath.Join(dir, ".git")
		os.WriteFile(filepath.Join(gd, "refs", "heads", "main"), []byte(content), 0o644)
		rs := NewRefs(gd)
		if _, _, err := rs.Read("refs/heads/main"); !errors.Is(err, ErrBrokenRef) {
			t.Errorf("%q: Read: %v, want ErrBrokenRef", content, err)
		}
		if _, _, err := rs.Read("HEAD"); !errors.Is(err, ErrBrokenRef) {
			t.Errorf("%q: Read HEAD: %v, want ErrBrokenRef", content, err)
		}
		err := rs.Update(Update{Name: "refs/heads/main", New: hs[0], Who: who})
		if !errors.Is(err, ErrBrokenRef) {
			t.Errorf("%q: Update over a broken ref: %v", content, err)
		}
		if last, ok := rs.LastLogged("refs/heads/main"); !ok || last != hs[1] {
			t.Errorf("%q: LastLogged = %s %v, want %s", content, last, ok, hs[1])
		}
	}
}

// Refs only in packed-refs are read there, and an update shadows them with
// a loose ref as git does.
func TestPackedRefs(t *testing.T) {
	dir, hs := newRepo(t)
	git(t, dir, "branch", "old", hs[0].String())
	git(t, dir, "pack-refs", "--all")
	rs := NewRefs(filepath.Join(dir, ".git"))
	for name, want := range map[string]Hash{"refs/heads/main": hs[1], "refs/heads/old": hs[0], "HEAD": hs[1]} {
		h, ok, err := rs.Read(name)
		if err != nil || !ok || h != want {
			t.Errorf("Read(%s) = %s %v %v, want %s", name, h, ok, err, want)
		}
	}
	if _, ok, err := rs.Read("refs/heads/none"); ok || err != nil {
		t.Errorf("a missing ref: ok=%v err=%v", ok, err)
	}
	if err := rs.Update(Update{Name: "refs/heads/old", Old: hs[0], New: hs[1], Message: "x", Who: who}); err != nil {
		t.Fatal(err)
	}
	if got := git(t, dir, "rev-parse", "old"); got != hs[1].String() {
		t.Errorf("old = %s", got)
	}
	git(t, dir, "fsck", "--strict")
}

// Detached HEAD is updated itself, with its own reflog only.
func TestDetachedHead(t *testing.T) {
	dir, hs := newRepo(t)
	git(t, dir, "checkout", "-q", "--detach", hs[0].String())
	rs := NewRefs(filepath.Join(dir, ".git"))
	br, det, err := rs.Head()
	if err != nil || br != "" || det != hs[0] {
		t.Fatalf("Head = %q %s %v", br, det, err)
	}
	if err := rs.Update(Update{Name: "HEAD", Old: hs[0], New: hs[1], Message: "commit: x", Who: who}); err != nil {
		t.Fatal(err)
	}
	if got := git(t, dir, "rev-parse", "HEAD"); got != hs[1].String() {
		t.Errorf("HEAD = %s", got)
	}
	if got := git(t, dir, "rev-parse", "main"); got != hs[1].String() {
		t.Errorf("main moved: %s", got)
	}
}

func FuzzReadRef(f *testing.F) {
	f.Add([]byte("ref: refs/heads/main\n"), []byte("# pack-refs with: peeled fully-peeled sorted \n"+strings.Repeat("a", 40)+" refs/heads/main\n^"+strings.Repeat("b", 40)+"\n"))
	f.Add([]byte(strings.Repeat("c", 40)+"\n"), []byte(""))
	f.Add([]byte(""), []byte(strings.Repeat("d", 40)+" refs/heads/x\n"))
	f.Fuzz(func(t *testing.T, head, packed []byte) {
		gd := t.TempDir()
		os.MkdirAll(filepath.Join(gd, "refs", "heads"), 0o755)
		os.WriteFile(filepath.Join(gd, "HEAD"), head, 0o644)
		os.WriteFile(filepath.Join(gd, "packed-refs"), packed, 0o644)
		rs := NewRefs(gd)
		h, ok, err := rs.Read("HEAD")
		if err == nil && ok && h.IsZero() && !strings.Contains(string(head)+string(packed), ZeroHash.String()) {
			t.Errorf("zero hash from %q / %q", head, packed)
		}
		rs.Head()
		rs.LastLogged("HEAD")
	})
}

// List gives every ref git lists, loose ones over packed ones, and passes
// over a lock file a writer holds (go-git's iterator fails on an empty
// one), but not over a broken ref.
func TestList(t *testing.T) {
	dir, hs := newRepo(t)
	gd := filepath.Join(dir, ".git")
	git(t, dir, "branch", "old", hs[0].String())
	git(t, dir, "tag", "v1", hs[0].String())
	git(t, dir, "tag", "-a", "-m", "annotated", "v2", hs[1].String())
	git(t, dir, "pack-refs", "--all")
	git(t, dir, "branch", "-f", "old", hs[1].String()) // loose again, over the packed value
	git(t, dir, "symbolic-ref", "refs/heads/alias", "refs/heads/main")
	if err := os.WriteFile(filepath.Join(gd, "refs", "heads", "main.lock"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	err := NewRefs(gd).List(func(name string, h Hash) error {
		if _, dup := got[name]; dup {
			t.Errorf("%s listed twice", name)
		}
		got[name] = h.String()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, line := range strings.Split(git(t, dir, "for-each-ref", "--format=%(objectname) %(refname) %(symref)"), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 {
			want[f[1]] = f[0]
		}
	}
	if len(got) != len(want) || len(want) != 4 {
		t.Fatalf("List = %v, git for-each-ref = %v", got, want)
	}
	for n, h := range want {
		if got[n] != h {
			t.Errorf("%s: List %s, git %s", n, got[n], h)
		}
	}
	if err := os.WriteFile(filepath.Join(gd, "refs", "heads", "old"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := NewRefs(gd).List(func(string, Hash) error { return nil }); !errors.Is(err, ErrBrokenRef) {
		t.Errorf("a broken ref: %v, want ErrBrokenRef", err)
	}
}

// A lock file git cannot take is ErrGitLocked, naming the file, whatever
// the git command was.
func TestCLIHeldLock(t *testing.T) {
	dir, hs := newRepo(t)
	lock := filepath.Join(dir, ".git", "refs", "heads", "main.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := CLI{Dir: dir}.Run(t.Context(), "update-ref", "refs/heads/main", hs[0].String())
	if !errors.Is(err, ErrGitLocked) || !strings.Contains(err.Error(), lock) {
		t.Fatalf("git update-ref under a held lock: %v", err)
	}
	_, err = CLI{Dir: dir}.Run(t.Context(), "update-ref", "refs/heads/nope", "nothing")
	if err == nil || errors.Is(err, ErrGitLocked) {
		t.Fatalf("another failure: %v", err)
	}
}
