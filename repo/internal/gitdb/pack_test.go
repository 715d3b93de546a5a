package gitdb

import (
	"bytes"
	"fmt"
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
	g, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var blobs []PackedBlob
	for _, n := range []int{0, 1, 15, 16, 2047, 2048, 1<<18 - 1, 1 << 18, 300000} {
		data := []byte(strings.Repeat(fmt.Sprintf("manifest line %d\n", n), n/16+1)[:n])
		blobs = append(blobs, PackedBlob{NewBlob(data), data})
	}
	blobs = append(blobs, blobs[3]) // put twice: stored once
	// go-git lists the packs now, when there are none.
	if _, err := g.ReadBlob(blobs[1].Hash, 1<<20); err == nil {
		t.Fatal("a blob not yet written reads")
	}
	if err := g.PutBlobsPacked(nil); err != nil {
		t.Fatal(err)
	}
	if err := g.PutBlobsPacked(blobs); err != nil {
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
	fresh, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range blobs {
		if got := gitCLI(t, dir, nil, "cat-file", "blob", b.Hash.String()); !bytes.Equal(got, b.Data) {
			t.Fatalf("git cat-file of the %d-byte blob: %d bytes back", len(b.Data), len(got))
		}
		for _, r := range []*Repo{g, fresh} { // the writer's go-git sees the new pack too
			got, err := r.ReadBlob(b.Hash, 1<<20)
			if err != nil || !bytes.Equal(got, b.Data) {
				t.Fatalf("go-git read of the %d-byte blob: %d bytes, %v", len(b.Data), len(got), err)
			}
		}
	}
	if tmp, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "tmp_*")); len(tmp) > 0 {
		t.Fatalf("temp files left: %v", tmp)
	}
}
