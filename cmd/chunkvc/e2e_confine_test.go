package main

import (
	"os"
	"path/filepath"
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

	// git clone, not chunkvc clone: go-git re-roots an absolute link
	// inside the tree, git keeps it as committed.
	v := newRunner(t)
	v.git("clone", "-q", evil.dir, "victim")
	v.dir = filepath.Join(v.dir, "victim")
	if l, err := os.Readlink(v.path(".chunkvc/manifests/sub")); err != nil || l != outside {
		t.Fatalf("git did not check out the link as committed: %q, %v", l, err)
	}
	v.run(binary, "checkout") // the link is no manifest: checkout fails on it
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
