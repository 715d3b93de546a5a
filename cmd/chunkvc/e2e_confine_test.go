package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// A history that holds .chunkvc/manifests/sub -> an outside directory must
// not make a victim's commit of sub/y.bin write there: the commit is
// refused, naming the link, before anything is committed.
func TestCommittedManifestLinkDoesNotLeadOutside(t *testing.T) {
	outside := t.TempDir()
	victimFile := filepath.Join(outside, "y.bin")
	if err := os.WriteFile(victimFile, []byte("the victim's own file\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	shared := t.TempDir() // a store both reach, so that git clone will do
	evil := newRunner(t)
	evil.cv("init", "--store", shared)
	evil.cv("track", "*.bin")
	evil.write("a.bin", randomBytes(50000, 1))
	evil.cv("commit", "-q", "-m", "v1")
	if err := os.Symlink(outside, evil.path(".chunkvc/manifests/sub")); err != nil {
		t.Fatal(err)
	}
	evil.git("add", ".chunkvc/manifests/sub")
	evil.git("commit", "-q", "-m", "innocent-looking")

	// git clone, not chunkvc clone: git keeps the absolute link as
	// committed, which is the attack.
	v := newRunner(t)
	v.git("clone", "-q", evil.dir, "victim")
	v.dir = filepath.Join(v.dir, "victim")
	if l, err := os.Readlink(v.path(".chunkvc/manifests/sub")); err != nil || l != outside {
		t.Fatalf("git did not check out the link as committed: %q, %v", l, err)
	}
	v.cv("store", "trust") // the victim shares the team's store
	// The link is no manifest: checkout fails on it, but writes a.bin.
	co := v.run(binary, "checkout")
	if b, err := os.ReadFile(v.path("a.bin")); err != nil || !bytes.Equal(b, randomBytes(50000, 1)) {
		t.Errorf("checkout did not write a.bin past the link: %v\n%s", err, co.stderr)
	}
	head := v.git("rev-parse", "HEAD")
	v.write("sub/y.bin", randomBytes(30000, 2))
	res := v.run(binary, "commit", "-m", "mine")

	if b, _ := os.ReadFile(victimFile); string(b) != "the victim's own file\n" {
		t.Fatalf("commit overwrote %s outside the work tree:\n%.200s", victimFile, b)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Fatalf("commit wrote into the outside directory: %d entries", len(ents))
	}
	if res.code == 0 {
		// Not refused: then the manifest must be inside the tree.
		if fi, err := os.Lstat(v.path(".chunkvc/manifests/sub/y.bin")); err != nil || !fi.Mode().IsRegular() {
			t.Fatalf("commit succeeded but its manifest is not in the work tree: %v", err)
		}
		return
	}
	if !strings.Contains(res.stderr, ".chunkvc/manifests/sub") || !strings.Contains(res.stderr, "symbolic link") {
		t.Errorf("refusal does not name the link:\n%s", res.stderr)
	}
	if v.git("rev-parse", "HEAD") != head {
		t.Error("a refused commit moved HEAD")
	}
}

// checkoutJSON mirrors checkout --json.
type checkoutJSON struct {
	Files []struct {
		Path   string `json:"path"`
		Status string `json:"status"`
	} `json:"files"`
	Failed []struct {
		Path  string `json:"path"`
		Error string `json:"error"`
	} `json:"failed"`
}

// commitJSON is the part of commit --json these tests read.
type commitJSON struct {
	Files []struct {
		Path   string `json:"path"`
		Status string `json:"status"`
	} `json:"files"`
	NotCheckedOut []string `json:"not_checked_out"`
}

func (r *runner) commitJSON(args ...string) commitJSON {
	r.t.Helper()
	var c commitJSON
	r.jsonOf(&c, append([]string{"commit"}, args...)...)
	return c
}

func deletedIn(c commitJSON) []string {
	var out []string
	for _, f := range c.Files {
		if f.Status == "deleted" {
			out = append(out, f.Path)
		}
	}
	return out
}

// A checkout that cannot write one file (a link in the way) writes the
// others; the file it did not write is not taken for deleted by the next
// commit, which says so, until a checkout writes it.
func TestFailedCheckoutDoesNotCommitDeletions(t *testing.T) {
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "*.bin")
	data := map[string][]byte{"a.bin": randomBytes(40000, 1), "sub/b.bin": randomBytes(40000, 2), "c.bin": randomBytes(40000, 3)}
	for p, b := range data {
		r.write(p, b)
	}
	r.cv("commit", "-q", "-m", "v1")
	for p := range data {
		os.Remove(r.path(p))
	}
	os.Remove(r.path("sub"))
	outside := t.TempDir()
	if err := os.Symlink(outside, r.path("sub")); err != nil {
		t.Fatal(err)
	}

	res := r.run(binary, "checkout", "--json")
	var co checkoutJSON
	if err := json.Unmarshal([]byte(res.stdout), &co); err != nil {
		t.Fatalf("checkout --json: %v\n%s%s", err, res.stdout, res.stderr)
	}
	if res.code == 0 || len(co.Failed) != 1 || co.Failed[0].Path != "sub/b.bin" || !strings.Contains(co.Failed[0].Error, "symbolic link") {
		t.Fatalf("checkout: exit %d, failed %+v; want sub/b.bin refused\n%s", res.code, co.Failed, res.stderr)
	}
	for _, p := range []string{"a.bin", "c.bin"} {
		if b, err := os.ReadFile(r.path(p)); err != nil || !bytes.Equal(b, data[p]) {
			t.Errorf("%s not written past the refused path: %v", p, err)
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatal("checkout wrote through the link")
	}
	if _, err := os.Stat(r.path(".git/chunkvc/checkout-unfinished")); err != nil {
		t.Fatalf("no record of the unfinished checkout: %v", err)
	}

	var st struct {
		Files []struct{ Path, Status string } `json:"files"`
	}
	r.jsonOf(&st, "status")
	if len(st.Files) != 1 || st.Files[0].Path != "sub/b.bin" || st.Files[0].Status != "not-checked-out" {
		t.Errorf("status: %+v, want sub/b.bin not-checked-out", st.Files)
	}
	r.write("a.bin", randomBytes(40000, 4))
	c := r.commitJSON("-m", "edit a")
	if d := deletedIn(c); len(d) != 0 {
		t.Fatalf("commit recorded deletions of files a checkout did not write: %v", d)
	}
	if !slices.Equal(c.NotCheckedOut, []string{"sub/b.bin"}) {
		t.Errorf("commit --json not_checked_out = %v, want [sub/b.bin]", c.NotCheckedOut)
	}
	if !strings.Contains(r.git("ls-tree", "-r", "--name-only", "HEAD"), ".chunkvc/manifests/sub/b.bin") {
		t.Fatal("sub/b.bin's manifest left HEAD")
	}
	r.write("a.bin", randomBytes(40000, 5))
	out := r.run(binary, "commit", "-m", "edit a again")
	if out.code != 0 || !strings.Contains(out.stderr, "not checked out") || !strings.Contains(out.stderr, "sub/b.bin") {
		t.Errorf("commit does not say why sub/b.bin is not deleted: exit %d\n%s", out.code, out.stderr)
	}
	if res := r.run(binary, "commit", "-m", "delete it", "sub/b.bin"); res.code == 0 {
		t.Error("commit of the unwritten path as a deletion succeeded")
	}

	// Once the link is gone, a checkout writes it and the record goes.
	os.Remove(r.path("sub"))
	r.cv("checkout", "-q")
	if b, err := os.ReadFile(r.path("sub/b.bin")); err != nil || !bytes.Equal(b, data["sub/b.bin"]) {
		t.Fatalf("sub/b.bin not written: %v", err)
	}
	if _, err := os.Stat(r.path(".git/chunkvc/checkout-unfinished")); err == nil {
		t.Error("a checkout that wrote everything left the record")
	}
	// Now a deletion is a deletion.
	os.Remove(r.path("c.bin"))
	if d := deletedIn(r.commitJSON("-m", "rm c")); !slices.Equal(d, []string{"c.bin"}) {
		t.Errorf("deleted %v, want [c.bin]", d)
	}
}

// A checkout killed after writing some files leaves the others listed:
// the next commit does not delete them, and a checkout finishes the job.
func TestKilledCheckoutDoesNotCommitDeletions(t *testing.T) {
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "*.bin")
	var names []string
	for i := range 24 {
		p := filepath.Join("d", string(rune('a'+i))+".bin")
		names = append(names, filepath.ToSlash(p))
		r.write(p, randomBytes(3<<20, int64(i)))
	}
	r.cv("commit", "-q", "-m", "v1")
	var missing []string
	for attempt := 0; attempt < 5 && len(missing) == 0; attempt++ {
		for _, p := range names {
			os.Remove(r.path(p))
		}
		someWritten := func() bool {
			for _, p := range names {
				if _, err := os.Stat(r.path(p)); err == nil {
					return true
				}
			}
			return false
		}
		if !r.killWhen(t, someWritten, "checkout", "-q") {
			continue
		}
		missing = missing[:0]
		for _, p := range names {
			if _, err := os.Stat(r.path(p)); err != nil {
				missing = append(missing, p)
			}
		}
	}
	if len(missing) == 0 || len(missing) == len(names) {
		t.Fatalf("could not kill a checkout half-way (%d of %d missing)", len(missing), len(names))
	}
	t.Logf("killed with %d of %d files not written", len(missing), len(names))

	r.write("new.bin", randomBytes(1000, 99))
	c := r.commitJSON("-m", "add new")
	if d := deletedIn(c); len(d) != 0 {
		t.Fatalf("commit after a killed checkout deleted %d files: %v", len(d), d)
	}
	sort.Strings(c.NotCheckedOut)
	if !slices.Equal(c.NotCheckedOut, missing) {
		t.Errorf("not_checked_out = %v, want %v", c.NotCheckedOut, missing)
	}
	r.cv("checkout", "-q")
	for i, p := range names {
		if b, err := os.ReadFile(r.path(p)); err != nil || !bytes.Equal(b, randomBytes(3<<20, int64(i))) {
			t.Fatalf("%s after the finishing checkout: %v", p, err)
		}
	}
	var st struct {
		Clean bool `json:"clean"`
	}
	r.jsonOf(&st, "status")
	if !st.Clean {
		t.Error("status not clean after the finishing checkout")
	}
}
