package repo

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
)

// gitCLI runs git in dir and returns its standard output.
func gitCLI(t *testing.T, dir string, stdin []byte, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.Bytes()
}

// TestManifestReadPrefersMatchingWorkCopy: HEAD's manifest is read from the
// work tree's copy only when that copy is the very blob; an edited copy is
// ignored.
func TestManifestReadPrefersMatchingWorkCopy(t *testing.T) {
	dir := t.TempDir()
	gitCLI(t, dir, nil, "init", "-q")
	g, err := openGit(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := &manifest.Manifest{Path: "a.bin", Format: "generic", Size: 3, Digest: hashing.Sum([]byte("abc")),
		Chunks: []manifest.Chunk{{Key: "0", Size: 3, ID: hashing.Sum([]byte("abc"))}}}
	enc, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	b := gitdb.NewBlob(enc)
	if err := g.PutBlob(b, enc); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, filepath.FromSlash(manifestPath("a.bin")))
	if err := os.MkdirAll(filepath.Dir(work), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, copyBytes := range [][]byte{enc, append(bytes.Clone(enc), "# edited\n"...), nil} {
		os.Remove(work)
		if copyBytes != nil {
			if err := os.WriteFile(work, copyBytes, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		_, got, err := g.readManifestBlob(b.Hash, "a.bin")
		if err != nil || !bytes.Equal(got, enc) {
			t.Errorf("work copy %q: read %q, %v; want HEAD's blob", copyBytes, got, err)
		}
		if _, ok := g.readWorkCopy(b.Hash, manifestPath("a.bin")); ok != bytes.Equal(copyBytes, enc) {
			t.Errorf("work copy %q: readWorkCopy ok = %v", copyBytes, ok)
		}
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
