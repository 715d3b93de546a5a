package repo

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/manifest"
)

// lowerSplitAt splits manifests of more than n chunks for the test.
func lowerSplitAt(t *testing.T, n int) {
	old := splitAt
	splitAt = n
	t.Cleanup(func() { splitAt = old })
}

// gitFilesUnder lists the files of rev's tree under dir, by path.
func gitFilesUnder(t *testing.T, root, rev, dir string) []string {
	out := strings.TrimSpace(string(gitCLI(t, root, nil, "ls-tree", "-r", "--name-only", rev, "--", dir)))
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// checkWorkCopies: the work tree holds, byte for byte, every manifest file
// Git's HEAD holds under .chunkvc/, and none that it does not.
func checkWorkCopies(t *testing.T, r *Repo) {
	t.Helper()
	inGit := gitFilesUnder(t, r.Root, "HEAD", ".chunkvc/")
	for _, f := range inGit {
		want := gitCLI(t, r.Root, nil, "cat-file", "blob", "HEAD:"+f)
		got, err := os.ReadFile(filepath.Join(r.Root, filepath.FromSlash(f)))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("work copy of %s: %d bytes (%v), git holds %d", f, len(got), err, len(want))
		}
	}
	var onDisk []string
	_ = filepath.WalkDir(filepath.Join(r.Root, ".chunkvc"), func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(r.Root, p)
			onDisk = append(onDisk, filepath.ToSlash(rel))
		}
		return nil
	})
	slices.Sort(onDisk)
	if !slices.Equal(onDisk, inGit) {
		t.Errorf("files under .chunkvc: work tree %q, HEAD %q", onDisk, inGit)
	}
}

// TestSplitManifestCommit: a file of more chunks than splitAt is committed
// as a root and shards; it reads back whole, an edit of one spot rewrites
// the root and the shards of the chunks it changed only, and a file that
// shrinks or goes away takes its shards with it. A file committed as one
// manifest converts when it changes.
func TestSplitManifestCommit(t *testing.T) {
	data := randomData(6<<20, 5)
	r := testRepo(t, data) // one manifest: splitAt is as shipped
	if got := gitFilesUnder(t, r.Root, "HEAD", manifest.ShardDir); got != nil {
		t.Fatalf("a %d-chunk file has shards: %q", 0, got)
	}
	lowerSplitAt(t, 3)
	x := filepath.Join(r.Root, "sub", "x.bin")
	edit := func(off int) {
		t.Helper()
		data[off] ^= 0xff
		if err := os.WriteFile(x, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Commit(t.Context(), CommitOptions{Message: "edit"}); err != nil {
			t.Fatal(err)
		}
	}
	edit(1 << 20) // converts
	shards := gitFilesUnder(t, r.Root, "HEAD", manifest.ShardDir)
	m, err := r.Manifest("", "sub/x.bin")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Chunks) <= 3 || len(shards) < 2 {
		t.Fatalf("%d chunks in %d shards (%q); want a split manifest", len(m.Chunks), len(shards), shards)
	}
	root := gitCLI(t, r.Root, nil, "cat-file", "blob", "HEAD:"+manifestPath("sub/x.bin"))
	again, parts, err := m.EncodeSplit(r.formats.ShardOf(m.Format))
	if err != nil || !bytes.Equal(again, root) || len(parts) != len(shards) {
		t.Fatalf("the manifest read back encodes to another root (%v), or %d shards for %d", err, len(parts), len(shards))
	}
	checkWorkCopies(t, r)
	var out bytes.Buffer
	if _, err := r.Cat(t.Context(), "", "sub/x.bin", &out); err != nil || !bytes.Equal(out.Bytes(), data) {
		t.Fatalf("cat of the split manifest's file: %d bytes, %v; want the %d committed", out.Len(), err, len(data))
	}

	edit(4 << 20)
	changed := strings.Fields(string(gitCLI(t, r.Root, nil, "diff", "--name-only", "HEAD~1", "HEAD")))
	if !slices.Contains(changed, manifestPath("sub/x.bin")) || len(changed) < 2 || len(changed) > 3 {
		t.Fatalf("an edit of one spot changed %q; want the root and one or two shards", changed)
	}
	st, err := r.Status(t.Context())
	if err != nil || len(st) != 0 {
		t.Fatalf("status after the commit: %+v, %v; want clean", st, err)
	}
	checkWorkCopies(t, r)

	data = data[:100]
	edit(50) // one chunk: one manifest again
	if got := gitFilesUnder(t, r.Root, "HEAD", manifest.ShardDir); got != nil {
		t.Fatalf("a one-chunk file kept shards: %q", got)
	}
	checkWorkCopies(t, r)

	data = randomData(6<<20, 9)
	edit(0)
	if err := os.Remove(x); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit(t.Context(), CommitOptions{Message: "gone"}); err != nil {
		t.Fatal(err)
	}
	if got := gitFilesUnder(t, r.Root, "HEAD", ".chunkvc/"); slices.ContainsFunc(got, func(f string) bool { return strings.Contains(f, "x.bin") }) {
		t.Fatalf("a deleted file left %q", got)
	}
	checkWorkCopies(t, r)
	gitCLI(t, r.Root, nil, "fsck", "--strict")
}
