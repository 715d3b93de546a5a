package repo

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const outsideBytes = "not chunkvc's\n"

func wantUnsafe(t *testing.T, err error, names string) {
	t.Helper()
	if !errors.Is(err, ErrUnsafePath) || !strings.Contains(err.Error(), names) {
		t.Fatalf("got %v; want ErrUnsafePath naming %s", err, names)
	}
}

// chunkvc's state under .git/chunkvc goes through the same tree: a linked
// directory there is refused, a linked file replaced; nothing outside
// changes.
func TestStateFilesNotFollowed(t *testing.T) {
	ctx := context.Background()
	data := randomData(3<<20, 5) // three blocks: a block cache entry
	r := testRepo(t, data)
	state := filepath.Join(r.gitDir(), "chunkvc")
	outside := t.TempDir()
	outFile := filepath.Join(outside, "x")
	if err := os.WriteFile(outFile, []byte(outsideBytes), 0o644); err != nil {
		t.Fatal(err)
	}
	// The block cache's directory and the stat cache's file as links.
	if err := os.RemoveAll(filepath.Join(state, "blocks")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(state, "blocks")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(state, "statcache")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outFile, filepath.Join(state, "statcache")); err != nil {
		t.Fatal(err)
	}
	data[100] ^= 1
	if err := os.WriteFile(r.abs("sub/x.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit(ctx, CommitOptions{Message: "v2"}); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Fatalf("the block cache wrote through a linked directory: %d entries", len(ents))
	}
	if b, _ := os.ReadFile(outFile); string(b) != outsideBytes {
		t.Fatalf("the stat cache wrote through a link: %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(state, "statcache")); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("the stat cache is not a regular file now: %v", err)
	}

	// .git/chunkvc itself a link: commands refuse, naming it.
	if err := os.Rename(state, filepath.Join(outside, "moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "moved"), state); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadDir(filepath.Join(outside, "moved"))
	_, err := r.Commit(ctx, CommitOptions{Message: "v3"})
	wantUnsafe(t, err, ".git/chunkvc is a symbolic link")
	after, _ := os.ReadDir(filepath.Join(outside, "moved"))
	if len(after) != len(before) {
		t.Fatalf("a refused command wrote through .git/chunkvc: %d entries, then %d", len(before), len(after))
	}
	if _, err := r.Checkout(ctx, CheckoutOptions{Force: true}); !errors.Is(err, ErrUnsafePath) {
		t.Fatalf("checkout with .git/chunkvc linked: %v", err)
	}
}

// A manifest copy is never read through a link: the work tree's copy
// would otherwise be trusted, once it hashes to the blob, from anywhere.
func TestWorkCopyNotReadThroughLink(t *testing.T) {
	data := randomData(100000, 6)
	r := testRepo(t, data)
	m := filepath.Join(r.Root, ".chunkvc/manifests/sub")
	copyDir := t.TempDir()
	if err := os.Rename(m, filepath.Join(copyDir, "sub")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(copyDir, "sub"), m); err != nil {
		t.Fatal(err)
	}
	head, err := r.git.Head()
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := r.git.manifestBlobs(head)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.git.readWorkCopy(blobs["sub/x.bin"], manifestPath("sub/x.bin")); ok {
		t.Fatal("the work-tree manifest copy was read through a linked directory")
	}
	// Through the object store instead, the same bytes.
	_, b, err := r.git.readManifestBlob(blobs["sub/x.bin"], "sub/x.bin")
	if want, _ := os.ReadFile(filepath.Join(copyDir, "sub/x.bin")); err != nil || !bytes.Equal(b, want) {
		t.Fatalf("manifest read: %v", err)
	}
}
