package gitdb

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// TestCommitIndexIsGits: the commit's tree is the one git write-tree makes
// of the same index, its parent is the branch's last commit, the branch
// (HEAD itself when detached) moves to it, and git fsck is content.
func TestCommitIndexIsGits(t *testing.T) {
	dir := gitIndexRepo(t)
	gitCLI(t, dir, nil, "add", "-N", "later.txt") // not in the tree yet, for git nor us
	g, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	sig := Ident{Name: "A <Tester>\n", Email: "a@b.invalid", When: time.Unix(1700000000, 0).UTC()}
	first, err := commitHash(g.commitIndex(goGitIndex(t, dir), "first", sig, sig))
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
	if _, _, err := g.commitIndex(goGitIndex(t, dir), "again", sig, sig); !errors.Is(err, ErrNothingToCommit) {
		t.Fatalf("commit of the same tree: %v, want ErrNothingToCommit", err)
	}

	// A branch that git gc packed (refs/heads/main only in packed-refs)
	// still moves.
	gitCLI(t, dir, nil, "pack-refs", "--all", "--prune")
	gitCLI(t, dir, nil, "rm", "-q", "--cached", "a-b")
	packed, err := commitHash(g.commitIndex(goGitIndex(t, dir), "packed", sig, sig))
	if err != nil {
		t.Fatalf("commit on a packed branch: %v", err)
	}
	if got := strings.TrimSpace(string(gitCLI(t, dir, nil, "rev-parse", "main", "main^"))); got != packed.String()+"\n"+first.String() {
		t.Fatalf("packed branch: main, main^ = %q; want %s, %s", got, packed, first)
	}
	first = packed

	gitCLI(t, dir, nil, "rm", "-q", "--cached", "a/c/d")
	gitCLI(t, dir, nil, "checkout", "-q", "--detach")
	second, err := commitHash(g.commitIndex(goGitIndex(t, dir), "second", sig, sig))
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
	g, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = g.commitIndex(goGitIndex(t, dir), "merged?", Ident{Name: "t", Email: "t@t", When: time.Now()}, Ident{Name: "t", Email: "t@t", When: time.Now()})
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
	_, _, err = g.commitIndex(goGitIndex(t, dir), "merged?", Ident{Name: "t", Email: "t@t", When: time.Now()}, Ident{Name: "t", Email: "t@t", When: time.Now()})
	if !errors.Is(err, ErrUnmerged) {
		t.Fatalf("commit of an index with a stage-2 entry: %v, want ErrUnmerged", err)
	}
}

// runGit runs git in dir, returning its output and error.
func runGit(dir string, args ...string) ([]byte, error) {
	return exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
}

// commitHash is commitIndex's commit.
func commitHash(m Made, _ []*index.Entry, err error) (Hash, error) { return m.Hash, err }

// treeNameLess orders entries as git does: a folder as its name and "/".
func TestTreeNameLess(t *testing.T) {
	names := []string{"", "a", "a-b", "a.b", "a/", "a0", "ab", "b", "a\xff"}
	for _, a := range names {
		for _, b := range names {
			for _, aDir := range []bool{false, true} {
				for _, bDir := range []bool{false, true} {
					ka, kb := a, b
					if aDir {
						ka += "/"
					}
					if bDir {
						kb += "/"
					}
					if got := treeNameLess(a, aDir, b, bDir); got != (ka < kb) {
						t.Errorf("treeNameLess(%q, %v, %q, %v) = %v", a, aDir, b, bDir, got)
					}
				}
			}
		}
	}
}
