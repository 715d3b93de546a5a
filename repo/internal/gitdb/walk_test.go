package gitdb

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// history makes, with git, a repository whose commits are:
//
//	main:  c1 - c2 - c3 - merge      (merge's second parent: t1)
//	                \            /
//	topic:           t1 --------      (tag v1, annotated, at t1)
//
// plus c4, committed on main and reset away (only the reflog names it),
// and a link and a submodule entry beside the files of dir "m". It returns
// the work tree and the commits by name.
func history(t *testing.T) (string, map[string]Hash) {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	hs := map[string]Hash{}
	commit := func(name, file string) {
		p := filepath.Join(dir, filepath.FromSlash(file))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(name+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		git(t, dir, "add", file)
		git(t, dir, "commit", "-q", "-m", name)
		h, err := ParseHash(git(t, dir, "rev-parse", "HEAD"))
		if err != nil {
			t.Fatal(err)
		}
		hs[name] = h
	}
	commit("c1", "m/a")
	commit("c2", "m/sub/b")
	git(t, dir, "checkout", "-q", "-b", "topic")
	commit("t1", "m/t")
	git(t, dir, "tag", "-a", "-m", "release", "v1")
	git(t, dir, "checkout", "-q", "main")
	commit("c3", "other")
	git(t, dir, "merge", "-q", "--no-edit", "topic")
	merge, err := ParseHash(git(t, dir, "rev-parse", "HEAD"))
	if err != nil {
		t.Fatal(err)
	}
	hs["merge"] = merge
	commit("c4", "m/gone")
	git(t, dir, "reset", "-q", "--hard", "HEAD^")
	if err := os.Symlink("a", filepath.Join(dir, "m", "link")); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "add", "m/link")
	git(t, dir, "update-index", "--add", "--cacheinfo", "160000,"+hs["c1"].String()+",m/module")
	git(t, dir, "commit", "-q", "-m", "odd entries")
	if hs["odd"], err = ParseHash(git(t, dir, "rev-parse", "HEAD")); err != nil {
		t.Fatal(err)
	}
	return dir, hs
}

// revList is what git rev-list prints for args, as a sorted set.
func revList(t *testing.T, dir string, args ...string) []string {
	t.Helper()
	out := strings.Fields(git(t, dir, append([]string{"rev-list"}, args...)...))
	slices.Sort(out)
	return out
}

// names returns the commits' names, sorted, failing on a duplicate.
func names(t *testing.T, cs []*Commit) []string {
	t.Helper()
	var out []string
	for _, c := range cs {
		out = append(out, c.Hash.String())
	}
	slices.Sort(out)
	if len(slices.Compact(slices.Clone(out))) != len(out) {
		t.Errorf("a commit is listed twice: %v", out)
	}
	return out
}

// The walks list what git rev-list lists, each commit once.
func TestWalksAreRevList(t *testing.T) {
	dir, hs := history(t)
	g, err := Open(filepath.Join(dir, "m", "sub")) // found from below the root
	if err != nil {
		t.Fatal(err)
	}
	if g.Root() != dir {
		t.Fatalf("Root() = %s, want %s", g.Root(), dir)
	}
	all, err := g.Reachable()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(t, all), revList(t, dir, "--all"); !slices.Equal(got, want) {
		t.Errorf("Reachable:\n%v\nwant (git rev-list --all)\n%v", got, want)
	}
	between, err := g.CommitsBetween([]Hash{hs["odd"], ZeroHash}, []Hash{hs["c2"], ZeroHash, {1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(t, between), revList(t, dir, hs["odd"].String(), "^"+hs["c2"].String()); !slices.Equal(got, want) {
		t.Errorf("CommitsBetween(odd, c2):\n%v\nwant\n%v", got, want)
	}
	if _, err := g.CommitsBetween([]Hash{{1, 2, 3}}, nil); err == nil {
		t.Error("CommitsBetween from a tip the repository lacks: no error")
	}
	hist, err := g.History([]Hash{hs["t1"], hs["c3"]})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(t, hist), revList(t, dir, hs["t1"].String(), hs["c3"].String()); !slices.Equal(got, want) {
		t.Errorf("History(t1, c3):\n%v\nwant\n%v", got, want)
	}
	if _, err := g.History([]Hash{{1, 2, 3}}); err == nil {
		t.Error("History of a commit the repository lacks: no error")
	}
	if slices.Contains(names(t, all), hs["c4"].String()) {
		t.Fatal("the reset-away commit is reachable; the reflog test proves nothing")
	}
	// gitEnv dates every commit and reflog entry at 1700000000.
	logged, err := g.ReflogCommits(time.Unix(1700000000-1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(logged, func(c *Commit) bool { return c.Hash == hs["c4"] }) {
		t.Error("ReflogCommits misses the commit a reset took away")
	}
	if logged, err = g.ReflogCommits(time.Unix(1700000000+1, 0)); err != nil || len(logged) != 0 {
		t.Errorf("ReflogCommits of entries newer than all: %d commits, %v", len(logged), err)
	}
}

// A Commit holds what git log prints of it.
func TestCommitIsGitLog(t *testing.T) {
	dir, hs := history(t)
	g, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, rev := range []string{"", "HEAD", "HEAD~1", "HEAD~3", "v1", hs["c1"].String()} {
		c, err := g.Resolve(rev)
		if err != nil {
			t.Fatalf("Resolve(%q): %v", rev, err)
		}
		spec := rev
		if spec == "" {
			spec = "HEAD"
		}
		want := git(t, dir, "log", "-1", "--format=%H|%T|%P|%an|%ae|%at|%cn|%ce|%ct", spec)
		var ps []string
		for _, p := range c.ParentHashes {
			ps = append(ps, p.String())
		}
		got := strings.Join([]string{c.Hash.String(), c.TreeHash.String(), strings.Join(ps, " "),
			c.Author.Name, c.Author.Email, strconv.FormatInt(c.Author.When.Unix(), 10),
			c.Committer.Name, c.Committer.Email, strconv.FormatInt(c.Committer.When.Unix(), 10)}, "|")
		if got != want {
			t.Errorf("Resolve(%q):\n%s\nwant (git log)\n%s", rev, got, want)
		}
		if msg := git(t, dir, "log", "-1", "--format=%B", spec); strings.TrimSpace(c.Message) != msg {
			t.Errorf("Resolve(%q).Message = %q, want %q", rev, c.Message, msg)
		}
	}
	if _, err := g.Resolve("no-such-branch"); err == nil {
		t.Error("Resolve of an unknown revision: no error")
	}
	tag, err := ParseHash(git(t, dir, "rev-parse", "v1"))
	if err != nil {
		t.Fatal(err)
	}
	if c, err := g.Peel(tag); err != nil || c.Hash != hs["t1"] {
		t.Errorf("Peel(tag v1) = %v, %v; want t1 %s", c, err, hs["t1"])
	}
	blob, err := ParseHash(git(t, dir, "rev-parse", "HEAD:m/a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Peel(blob); err == nil {
		t.Error("Peel of a blob: no error")
	}
	if _, err := g.ReadCommit(blob); err == nil {
		t.Error("ReadCommit of a blob: no error")
	}
}

// ManifestBlobs lists the files below a folder of a commit as git ls-tree
// does, links included (as git stores them: a blob of the target) and
// submodules left out.
func TestManifestBlobsIsLsTree(t *testing.T) {
	dir, _ := history(t)
	g, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	head, err := g.Head()
	if err != nil {
		t.Fatal(err)
	}
	got, err := g.ManifestBlobs(head, "m")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Hash{}
	for _, line := range strings.Split(git(t, dir, "ls-tree", "-r", "HEAD", "m/"), "\n") {
		meta, p, _ := strings.Cut(line, "\t")
		f := strings.Fields(meta)
		if f[1] != "blob" {
			continue
		}
		h, err := ParseHash(f[2])
		if err != nil {
			t.Fatal(err)
		}
		want[strings.TrimPrefix(p, "m/")] = h
	}
	if len(got) != len(want) || len(want) != 4 {
		t.Fatalf("ManifestBlobs = %v, want %v", got, want)
	}
	for p, h := range want {
		if got[p] != h {
			t.Errorf("%s: %s, want %s", p, got[p], h)
		}
	}
	for _, dir := range []string{"none", "other"} { // no such folder; a file
		if m, err := g.ManifestBlobs(head, dir); err != nil && dir == "none" || len(m) != 0 {
			t.Errorf("ManifestBlobs(%q) = %v, %v; want none", dir, m, err)
		}
	}
	if m, err := g.ManifestBlobs(nil, "m"); err != nil || len(m) != 0 {
		t.Errorf("ManifestBlobs(nil) = %v, %v", m, err)
	}
}

// An unborn branch has no commits; a broken one is an error, not unborn.
func TestHeadUnbornAndBroken(t *testing.T) {
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	g, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := g.Head(); c != nil || err != nil {
		t.Errorf("Head() on an unborn branch = %v, %v; want nil, nil", c, err)
	}
	if _, err := g.Resolve(""); !errors.Is(err, ErrNoCommits) {
		t.Errorf("Resolve(\"\") on an unborn branch: %v, want ErrNoCommits", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".git", "refs", "heads", "main"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Head(); !errors.Is(err, ErrBrokenRef) {
		t.Errorf("Head() on an empty ref file: %v, want ErrBrokenRef", err)
	}
	if _, err := Open(t.TempDir()); !errors.Is(err, ErrNotRepository) {
		t.Errorf("Open outside a repository: %v, want ErrNotRepository", err)
	}
}

// Remotes and Branch read what git configured.
func TestRemotesAndBranch(t *testing.T) {
	dir, _ := history(t)
	git(t, dir, "remote", "add", "up", "https://example.invalid/up.git")
	git(t, dir, "remote", "add", "origin", "/srv/origin")
	g, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := g.Remotes()
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Name != "origin" || rs[1].Name != "up" ||
		!slices.Equal(rs[0].URLs, []string{"/srv/origin"}) || !slices.Equal(rs[1].URLs, []string{"https://example.invalid/up.git"}) {
		t.Errorf("Remotes() = %+v", rs)
	}
	if b := g.Branch(); b != "main" {
		t.Errorf("Branch() = %q, want main", b)
	}
	git(t, dir, "checkout", "-q", "--detach")
	if b := g.Branch(); b != "HEAD" {
		t.Errorf("Branch() detached = %q, want HEAD", b)
	}
}

// FuzzParseReflogLine: a line is read when, and only when, it has the
// fields of a reflog entry and its time is a decimal an int64 holds.
func FuzzParseReflogLine(f *testing.F) {
	z, a := ZeroHash.String(), strings.Repeat("a", 40)
	f.Add(z + " " + a + " Ann Example <ann@example.com> 1700000000 +0100\tcommit (initial): first")
	f.Add(a + " " + a + " A <a@b> 99999999999999999999 +0000\treset: moving to HEAD")
	f.Add(a + " " + a + " <> -5 +0000\tx")
	f.Add("short line")
	f.Fuzz(func(t *testing.T, line string) {
		from, to, sec, ok := parseReflogLine(line)
		head, _, _ := strings.Cut(line, "\t")
		fs := strings.Fields(head)
		if len(fs) < 4 {
			if ok {
				t.Fatalf("%q: read from %d fields", line, len(fs))
			}
			return
		}
		ts := fs[len(fs)-2]
		want, err := strconv.ParseInt(ts, 10, 64)
		digits := strings.Trim(ts, "0123456789") == ""
		if wantOK := err == nil && digits; ok != wantOK || ok && (sec != want || from != fs[0] || to != fs[1]) {
			t.Fatalf("%q: %q %q %d %v; want time %q read: %v", line, from, to, sec, ok, ts, wantOK)
		}
	})
}
