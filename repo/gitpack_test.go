package repo

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPutBlobsPackedIsGits: the pack chunkvc writes is one git verifies,
// and every blob in it reads back, by git and by go-git, as the bytes put;
// sizes cross each byte of the object header's length.
func TestPutBlobsPackedIsGits(t *testing.T) {
	dir := t.TempDir()
	gitCLI(t, dir, nil, "init", "-q")
	g, err := openGit(dir)
	if err != nil {
		t.Fatal(err)
	}
	var blobs []packedBlob
	for _, n := range []int{0, 1, 15, 16, 2047, 2048, 1<<18 - 1, 1 << 18, 300000} {
		data := []byte(strings.Repeat(fmt.Sprintf("manifest line %d\n", n), n/16+1)[:n])
		blobs = append(blobs, packedBlob{newBlob(data), data})
	}
	blobs = append(blobs, blobs[3]) // put twice: stored once
	// go-git lists the packs now, when there are none.
	if _, err := g.readBlob(blobs[1].hash, 1<<20); err == nil {
		t.Fatal("a blob not yet written reads")
	}
	if err := g.putBlobsPacked(nil); err != nil {
		t.Fatal(err)
	}
	if err := g.putBlobsPacked(blobs); err != nil {
		t.Fatal(err)
	}
	idx, err := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "pack-*.idx"))
	if err != nil || len(idx) != 1 {
		t.Fatalf("pack indexes %v (%v), want one", idx, err)
	}
	out := string(gitCLI(t, dir, nil, "verify-pack", "-v", idx[0]))
	if !strings.Contains(out, "non delta: 9 objects") {
		t.Fatalf("git verify-pack -v:\n%s", out)
	}
	fresh, err := openGit(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range blobs {
		if got := gitCLI(t, dir, nil, "cat-file", "blob", b.hash.String()); !bytes.Equal(got, b.data) {
			t.Fatalf("git cat-file of the %d-byte blob: %d bytes back", len(b.data), len(got))
		}
		for _, r := range []*gitRepo{g, fresh} { // the writer's go-git sees the new pack too
			got, err := r.readBlob(b.hash, 1<<20)
			if err != nil || !bytes.Equal(got, b.data) {
				t.Fatalf("go-git read of the %d-byte blob: %d bytes, %v", len(b.data), len(got), err)
			}
		}
	}
	if tmp, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "tmp_*")); len(tmp) > 0 {
		t.Fatalf("temp files left: %v", tmp)
	}
}

// TestCommitOfManyFilesPacksManifests: a commit of packBlobsFrom files or
// more makes a history git finds whole (every manifest in HEAD as in the
// work tree), and so does the next one of a few of them.
func TestCommitOfManyFilesPacksManifests(t *testing.T) {
	r := testRepo(t, []byte("first"))
	for i := range packBlobsFrom + 6 {
		if err := os.WriteFile(filepath.Join(r.Root, fmt.Sprintf("f%03d.bin", i)), []byte(strings.Repeat("x", i+1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	check := func(step string) {
		gitCLI(t, r.Root, nil, "fsck", "--strict", "--no-dangling")
		if st := gitCLI(t, r.Root, nil, "status", "--porcelain"); len(st) != 0 {
			t.Fatalf("%s: git status:\n%s", step, st)
		}
		for i := range packBlobsFrom + 6 {
			p := fmt.Sprintf(".chunkvc/manifests/f%03d.bin", i)
			want, err := os.ReadFile(filepath.Join(r.Root, p))
			if err != nil {
				t.Fatal(err)
			}
			if got := gitCLI(t, r.Root, nil, "cat-file", "blob", "HEAD:"+p); !bytes.Equal(got, want) {
				t.Fatalf("%s: HEAD's %s differs from the work tree's", step, p)
			}
		}
	}
	if _, err := r.Commit(context.Background(), CommitOptions{Message: "many"}); err != nil {
		t.Fatal(err)
	}
	if packs, _ := filepath.Glob(filepath.Join(r.Root, ".git", "objects", "pack", "pack-*.pack")); len(packs) != 1 {
		t.Fatalf("packs after the commit of %d files: %v", packBlobsFrom+6, packs)
	}
	check("many")
	if err := os.WriteFile(filepath.Join(r.Root, "f001.bin"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit(context.Background(), CommitOptions{Message: "one"}); err != nil {
		t.Fatal(err)
	}
	check("one")
}
