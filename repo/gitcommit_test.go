package repo

import (
	"bytes"
	"crypto/sha1"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// gitIndexRepo makes a repository with git whose index holds what an index
// can: folders whose names sort around "/" (a, a-b, a.txt, a0), an
// executable, a symbolic link, a gitlink, a path added with intent and one
// marked skip-worktree.
func gitIndexRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	gitCLI(t, dir, nil, "init", "-q", "-b", "main")
	for name, data := range map[string]string{
		"a.txt": "one\n", "a/b": "two\n", "a/c/d": "three\n", "a-b": "four\n", "a0": "five\n",
		"deep/x/y/z.bin": "six\n", "run.sh": "#!/bin/sh\n", "later.txt": "later\n",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	gitCLI(t, dir, nil, "add", "a.txt", "a", "a-b", "a0", "deep", "run.sh", "link")
	blob := strings.TrimSpace(string(gitCLI(t, dir, nil, "hash-object", "a.txt")))
	gitCLI(t, dir, nil, "update-index", "--add", "--cacheinfo", "160000,"+blob+",sub")
	return dir
}

// goGitIndex reads dir's index with go-git.
func goGitIndex(t *testing.T, dir string) *index.Index {
	t.Helper()
	g, err := openGit(dir)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := g.r.Storer.Index()
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

// TestSetIndexIsGits: the index chunkvc writes is go-git's encoding, and
// git reads every field of every entry back as it wrote them, in each
// version git writes (2; 3 once a path is added with intent or marked
// skip-worktree; 4 when asked).
func TestSetIndexIsGits(t *testing.T) {
	dir := gitIndexRepo(t)
	steps := []struct {
		name string
		git  []string
	}{
		{"version 2", nil},
		{"intent to add", []string{"add", "-N", "later.txt"}},
		{"skip-worktree", []string{"update-index", "--skip-worktree", "a0"}},
		{"version 4", []string{"update-index", "--index-version", "4"}},
	}
	for _, s := range steps {
		if s.git != nil {
			gitCLI(t, dir, nil, s.git...)
		}
		before := gitCLI(t, dir, nil, "ls-files", "--stage", "--debug", "-t")
		idx := goGitIndex(t, dir)
		var want bytes.Buffer
		if err := index.NewEncoder(&want).Encode(goGitIndex(t, dir)); err != nil {
			t.Fatal(err)
		}
		got, err := encodeIndex(idx)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("%s (version %d): encodeIndex differs from go-git's encoder (%d bytes, want %d)", s.name, idx.Version, len(got), want.Len())
		}
		g, err := openGit(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.setIndex(goGitIndex(t, dir)); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if after := gitCLI(t, dir, nil, "ls-files", "--stage", "--debug", "-t"); !bytes.Equal(after, before) {
			t.Fatalf("%s: git reads the index back otherwise:\n%s\nwant\n%s", s.name, after, before)
		}
		if _, err := os.Stat(filepath.Join(dir, ".git", "index.lock")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s: index.lock left behind: %v", s.name, err)
		}
	}
}

// TestSetIndexHonoursGitsLock: while a git command holds index.lock the
// index is not written, and the lock is not taken away from it.
func TestSetIndexHonoursGitsLock(t *testing.T) {
	dir := gitIndexRepo(t)
	g, err := openGit(dir)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(dir, ".git", "index")
	before, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name+".lock", []byte("git's"), 0o644); err != nil {
		t.Fatal(err)
	}
	idx := goGitIndex(t, dir)
	idx.Entries = idx.Entries[:1]
	err = g.setIndex(idx)
	if !errors.Is(err, ErrGitLocked) || !strings.Contains(err.Error(), "index.lock") {
		t.Fatalf("setIndex with index.lock held = %v, want an error naming it", err)
	}
	if after, _ := os.ReadFile(name); !bytes.Equal(after, before) {
		t.Fatal("the index was written while git held its lock")
	}
	if lock, _ := os.ReadFile(name + ".lock"); string(lock) != "git's" {
		t.Fatalf("index.lock now holds %q", lock)
	}
}

// TestCommitIndexIsGits: the commit's tree is the one git write-tree makes
// of the same index, its parent is the branch's last commit, the branch
// (HEAD itself when detached) moves to it, and git fsck is content.
func TestCommitIndexIsGits(t *testing.T) {
	dir := gitIndexRepo(t)
	gitCLI(t, dir, nil, "add", "-N", "later.txt") // not in the tree yet, for git nor us
	g, err := openGit(dir)
	if err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "A <Tester>\n", Email: "a@b.invalid", When: time.Unix(1700000000, 0).UTC()}
	first, err := g.commitIndex(goGitIndex(t, dir), "first", sig)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSpace(string(gitCLI(t, dir, nil, "write-tree")))
	if got := strings.TrimSpace(string(gitCLI(t, dir, nil, "rev-parse", "main^{tree}"))); got != want {
		t.Fatalf("first commit's tree %s, git write-tree %s", got, want)
	}
	if got := strings.TrimSpace(string(gitCLI(t, dir, nil, "rev-parse", "main"))); got != first.String() {
		t.Fatalf("main at %s, committed %s", got, first)
	}
	if _, err := g.commitIndex(goGitIndex(t, dir), "again", sig); !errors.Is(err, ErrNothingToCommit) {
		t.Fatalf("commit of the same tree: %v, want ErrNothingToCommit", err)
	}

	// A branch that git gc packed (refs/heads/main only in packed-refs)
	// still moves.
	gitCLI(t, dir, nil, "pack-refs", "--all", "--prune")
	gitCLI(t, dir, nil, "rm", "-q", "--cached", "a-b")
	packed, err := g.commitIndex(goGitIndex(t, dir), "packed", sig)
	if err != nil {
		t.Fatalf("commit on a packed branch: %v", err)
	}
	if got := strings.TrimSpace(string(gitCLI(t, dir, nil, "rev-parse", "main", "main^"))); got != packed.String()+"\n"+first.String() {
		t.Fatalf("packed branch: main, main^ = %q; want %s, %s", got, packed, first)
	}
	first = packed

	gitCLI(t, dir, nil, "rm", "-q", "--cached", "a/c/d")
	gitCLI(t, dir, nil, "checkout", "-q", "--detach")
	second, err := g.commitIndex(goGitIndex(t, dir), "second", sig)
	if err != nil {
		t.Fatal(err)
	}
	want = strings.TrimSpace(string(gitCLI(t, dir, nil, "write-tree")))
	if got := strings.TrimSpace(string(gitCLI(t, dir, nil, "rev-parse", "HEAD^{tree}"))); got != want {
		t.Fatalf("second commit's tree %s, git write-tree %s", got, want)
	}
	if got := strings.TrimSpace(string(gitCLI(t, dir, nil, "rev-parse", "HEAD", "HEAD^", "main"))); got != second.String()+"\n"+first.String()+"\n"+first.String() {
		t.Fatalf("detached commit: HEAD, HEAD^, main = %q; want %s, %s, %s", got, second, first, first)
	}
	if author := string(gitCLI(t, dir, nil, "log", "-1", "--format=%an|%ae|%at|%s")); author != "A Tester|a@b.invalid|1700000000|second\n" {
		t.Fatalf("commit reads %q", author)
	}
	gitCLI(t, dir, nil, "fsck", "--strict", "--no-dangling")
}

// TestCommitIndexRefusesUnmerged: an index with a conflict git has not
// resolved is not committed, and HEAD stays.
func TestCommitIndexRefusesUnmerged(t *testing.T) {
	dir := t.TempDir()
	gitCLI(t, dir, nil, "init", "-q", "-b", "main")
	gitCLI(t, dir, nil, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "root")
	write := func(s string) {
		if err := os.WriteFile(filepath.Join(dir, "f"), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	id := []string{"-c", "user.name=t", "-c", "user.email=t@t"}
	gitCLI(t, dir, nil, "checkout", "-q", "-b", "other")
	write("other\n")
	gitCLI(t, dir, nil, "add", "f")
	gitCLI(t, dir, nil, append(id, "commit", "-q", "-m", "other")...)
	gitCLI(t, dir, nil, "checkout", "-q", "main")
	write("main\n")
	gitCLI(t, dir, nil, "add", "f")
	gitCLI(t, dir, nil, append(id, "commit", "-q", "-m", "main")...)
	head := gitCLI(t, dir, nil, "rev-parse", "HEAD")
	cmd := append(id, "merge", "-q", "other")
	if out, err := runGit(dir, cmd...); err == nil {
		t.Fatalf("merge did not conflict:\n%s", out)
	}
	g, err := openGit(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.commitIndex(goGitIndex(t, dir), "merged?", &object.Signature{Name: "t", Email: "t@t", When: time.Now()})
	if !errors.Is(err, ErrUnmerged) {
		t.Fatalf("commit of a conflicted index: %v, want ErrUnmerged", err)
	}
	if now := gitCLI(t, dir, nil, "rev-parse", "HEAD"); !bytes.Equal(now, head) {
		t.Fatalf("HEAD moved to %s", now)
	}
	// A path only one side added is a conflict of one entry (stage 2).
	gitCLI(t, dir, nil, "merge", "--abort")
	blob := strings.TrimSpace(string(gitCLI(t, dir, nil, "hash-object", "-w", "f")))
	gitCLI(t, dir, []byte("100644 "+blob+" 2\tours-only\n"), "update-index", "--index-info")
	_, err = g.commitIndex(goGitIndex(t, dir), "merged?", &object.Signature{Name: "t", Email: "t@t", When: time.Now()})
	if !errors.Is(err, ErrUnmerged) {
		t.Fatalf("commit of an index with a stage-2 entry: %v, want ErrUnmerged", err)
	}
}

// runGit runs git in dir, returning its output and error.
func runGit(dir string, args ...string) ([]byte, error) {
	return exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
}

// TestIndexReadIsGoGits: the index chunkvc decodes itself is the one
// go-git's decoder makes, entry for entry, in versions 2 and 3 and with a
// name too long for its length field; an index with extensions (git's
// cache tree) or of version 4 is go-git's to read, and still reads.
func TestIndexReadIsGoGits(t *testing.T) {
	dir := gitIndexRepo(t)
	long := strings.Repeat("d/", 2100) + "f"
	blob := strings.TrimSpace(string(gitCLI(t, dir, nil, "hash-object", "a.txt")))
	gitCLI(t, dir, nil, "update-index", "--add", "--cacheinfo", "100644,"+blob+","+long)
	g, err := openGit(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range [][]string{nil, {"add", "-N", "later.txt"}, {"write-tree"}, {"update-index", "--index-version", "4"}} {
		if step != nil {
			gitCLI(t, dir, nil, step...)
		}
		data, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
		if err != nil {
			t.Fatal(err)
		}
		want := goGitIndex(t, dir)
		got, err := g.index()
		if err != nil {
			t.Fatalf("after git %v: %v", step, err)
		}
		if !sameEntries(got.Entries, want.Entries) || got.Version != want.Version {
			t.Fatalf("after git %v: index read otherwise than go-git reads it", step)
		}
		if _, ok := decodeIndex(data); ok != (step == nil || step[0] == "add") {
			t.Fatalf("after git %v: decodeIndex ok = %v", step, ok)
		}
		if step == nil { // written by chunkvc: decoded here
			if err := g.setIndex(want); err != nil {
				t.Fatal(err)
			}
			data, _ = os.ReadFile(filepath.Join(dir, ".git", "index"))
			if idx, ok := decodeIndex(data); !ok || !sameEntries(idx.Entries, want.Entries) {
				t.Fatal("the index setIndex wrote does not decode to its entries")
			}
		}
	}
	var found bool
	for _, e := range goGitIndex(t, dir).Entries {
		found = found || e.Name == long
	}
	if !found {
		t.Fatal("the long name was lost")
	}
}

func sameEntries(a, b []*index.Entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := *a[i], *b[i]
		if !x.CreatedAt.Equal(y.CreatedAt) || !x.ModifiedAt.Equal(y.ModifiedAt) {
			return false
		}
		x.CreatedAt, x.ModifiedAt, y.CreatedAt, y.ModifiedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		if x != y {
			return false
		}
	}
	return true
}

// FuzzDecodeIndex: whatever the bytes, an index decodeIndex accepts is
// the one go-git's decoder reads from them.
func FuzzDecodeIndex(f *testing.F) {
	seed := &index.Index{Version: 2}
	for i, name := range []string{"a", "a/b", strings.Repeat("x", 5000), "c"} {
		e := seed.Add(name)
		e.Size, e.Mode, e.Hash[0] = uint32(i), 0o100644, byte(i)
		e.ModifiedAt = time.Unix(int64(1e9+i), int64(i))
	}
	seed.Entries[3].IntentToAdd = true
	for _, v := range []uint32{2, 3} {
		seed.Version = v
		b, err := encodeIndex(seed)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > sha1.Size { // else mutations would only ever break the checksum
			sum := sha1.Sum(b[:len(b)-sha1.Size])
			copy(b[len(b)-sha1.Size:], sum[:])
		}
		got, ok := decodeIndex(b)
		if !ok {
			return
		}
		want := &index.Index{}
		if err := index.NewDecoder(bytes.NewReader(b)).Decode(want); err != nil {
			t.Fatalf("decodeIndex accepted what go-git refuses: %v", err)
		}
		if got.Version != want.Version || !sameEntries(got.Entries, want.Entries) {
			t.Fatal("decodeIndex and go-git disagree")
		}
	})
}
