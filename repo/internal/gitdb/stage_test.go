package gitdb

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// lsTree maps each file of rev to its blob, as git ls-tree -r prints it.
func lsTree(t *testing.T, dir, rev string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, line := range strings.Split(git(t, dir, "ls-tree", "-r", rev), "\n") {
		meta, p, _ := strings.Cut(line, "\t")
		if f := strings.Fields(meta); len(f) == 3 {
			out[p] = f[2]
		}
	}
	return out
}

// hashObject writes data as a blob with git and returns its name.
func hashObject(t *testing.T, dir, data string) string {
	t.Helper()
	return strings.TrimSpace(string(gitCLI(t, dir, []byte(data), "hash-object", "-w", "--stdin")))
}

// Stage records files in the index as git add would, and removes paths.
func TestStageIsGitAdd(t *testing.T) {
	dir, _ := newRepo(t)
	g, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Stage(map[string][]byte{"cfg/a": []byte("one\n")}, []string{"f"}); err != nil {
		t.Fatal(err)
	}
	got := git(t, dir, "ls-files", "--stage")
	want := "100644 " + hashObject(t, dir, "one\n") + " 0\tcfg/a"
	if got != want {
		t.Errorf("git ls-files --stage:\n%s\nwant\n%s", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "index.lock")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("index.lock left: %v", err)
	}
	git(t, dir, "fsck", "--strict", "--no-dangling")
}

// Commit settles the index entries its Settle speaks for to HEAD's (a
// stale entry staged by a commit never made is dropped, a changed one set
// back, a missing one added), writes its own files and removals, and
// leaves the others (staged by the user) to ride along; the index it
// leaves is the new HEAD's.
func TestCommitSettlesIndex(t *testing.T) {
	t.Setenv("GIT_AUTHOR_NAME", "Ann Example")
	t.Setenv("GIT_AUTHOR_EMAIL", "ann@example.com")
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	for p, data := range map[string]string{"m/a": "a\n", "m/b": "b\n", "m/gone": "gone\n", "x": "x\n"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, dir, "add", ".")
	git(t, dir, "commit", "-q", "-m", "base")
	head := lsTree(t, dir, "HEAD")
	// What a killed commit, and the user, left staged.
	git(t, dir, "update-index", "--add", "--cacheinfo", "100644,"+hashObject(t, dir, "stale\n")+",m/c")
	git(t, dir, "update-index", "--cacheinfo", "100644,"+hashObject(t, dir, "a2\n")+",m/a")
	git(t, dir, "rm", "-q", "--cached", "m/b")
	git(t, dir, "update-index", "--cacheinfo", "100644,"+hashObject(t, dir, "x2\n")+",x")

	g, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	d := NewBlob([]byte("d\n"))
	if err := g.PutBlob(d, []byte("d\n")); err != nil {
		t.Fatal(err)
	}
	var inM []TreeEntry
	for p, h := range head {
		if sub, ok := strings.CutPrefix(p, "m/"); ok {
			e := TreeEntry{Path: sub}
			e.Hash, _ = ParseHash(h)
			inM = append(inM, e)
		}
	}
	slices.SortFunc(inM, func(a, b TreeEntry) int { return strings.Compare(a.Path, b.Path) })
	s := Settle{Head: []HeadFiles{{Dir: "m", Files: inM}}, Scope: func(p string) bool { return strings.HasPrefix(p, "m/") }}
	made, err := g.CommitListing("settled", map[string]Blob{"m/d": d, "m/0/e": d}, []string{"m/gone"}, s, "m", "none")
	if err != nil {
		t.Fatal(err)
	}
	h := made.Hash
	// Its listing is what the tree written holds, in byte order: a
	// folder's files before the files of the folders in it is not that.
	for i, dir := range []string{"m", "none"} {
		read, err := g.ListFiles(made.Tree, dir)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(made.Lists[i], read) || !slices.IsSortedFunc(read, func(a, b TreeEntry) int { return strings.Compare(a.Path, b.Path) }) {
			t.Errorf("%s: CommitListing lists %v, the tree holds %v", dir, made.Lists[i], read)
		}
	}
	if n := len(made.Lists[0]); n != 4 || made.Lists[0][0].Path != "0/e" {
		t.Errorf("m lists %v, want 0/e, a, b, d", made.Lists[0])
	}
	if got := git(t, dir, "rev-parse", "HEAD"); got != h.String() {
		t.Fatalf("HEAD at %s, committed %s", got, h)
	}
	got := lsTree(t, dir, "HEAD")
	want := map[string]string{"m/a": head["m/a"], "m/b": head["m/b"], "m/d": d.Hash.String(), "m/0/e": d.Hash.String(), "x": hashObject(t, dir, "x2\n")}
	if len(got) != len(want) {
		t.Errorf("HEAD holds %v, want %v", got, want)
	}
	for p, h := range want {
		if got[p] != h {
			t.Errorf("HEAD's %s: %s, want %s", p, got[p], h)
		}
	}
	if staged := git(t, dir, "diff", "--cached", "--name-status", "HEAD"); staged != "" {
		t.Errorf("the index differs from the commit:\n%s", staged)
	}
	if author := git(t, dir, "log", "-1", "--format=%an <%ae> %s"); author != "Ann Example <ann@example.com> settled" {
		t.Errorf("commit by %q", author)
	}

	// Without a scope nothing is settled: what is staged rides along.
	git(t, dir, "update-index", "--add", "--cacheinfo", "100644,"+hashObject(t, dir, "stale\n")+",m/c")
	if _, err := g.Commit("unsettled", nil, nil, Settle{}); err != nil {
		t.Fatal(err)
	}
	if got := lsTree(t, dir, "HEAD"); got["m/c"] != hashObject(t, dir, "stale\n") {
		t.Errorf("HEAD's m/c: %q, want the staged blob", got["m/c"])
	}
	if _, err := g.Commit("again", nil, nil, Settle{}); !errors.Is(err, ErrNothingToCommit) {
		t.Errorf("a commit of HEAD's tree: %v, want ErrNothingToCommit", err)
	}
	git(t, dir, "fsck", "--strict", "--no-dangling")
}
