package repo

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
	"github.com/chunkvc/chunkvc/repo/internal/mcache"
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

// TestManifestCache: a commit leaves the chunk lines of a split manifest
// in the manifest cache under its root blob, the very lines the root's
// shards decode to; a later reading trusts that cache only for its root,
// and a damaged or foreign cache changes nothing that is read.
func TestManifestCache(t *testing.T) {
	data := randomData(6<<20, 11)
	r := testRepo(t, data)
	lowerSplitAt(t, 3)
	x := filepath.Join(r.Root, "sub", "x.bin")
	data[3<<20] ^= 1
	if err := os.WriteFile(x, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit(t.Context(), CommitOptions{Message: "split"}); err != nil {
		t.Fatal(err)
	}
	rootText := gitCLI(t, r.Root, nil, "cat-file", "blob", "HEAD:"+manifestPath("sub/x.bin"))
	var parts []manifest.Part
	for _, f := range gitFilesUnder(t, r.Root, "HEAD", manifest.ShardPath("sub/x.bin", "")) {
		parts = append(parts, manifest.Part{Name: strings.TrimPrefix(f, manifest.ShardPath("sub/x.bin", "")+"/"),
			Data: gitCLI(t, r.Root, nil, "cat-file", "blob", "HEAD:"+f)})
	}
	want, err := manifest.DecodeSplit(rootText, parts)
	if err != nil {
		t.Fatal(err)
	}
	slot := mcache.Slot(r.git.mcacheDir(), "sub/x.bin")
	cached, ok := mcache.Load(slot, gitdb.BlobHash(rootText), len(want.Chunks))
	if !ok || !reflect.DeepEqual(cached, want.Chunks) {
		t.Fatalf("after the commit the cache holds %d chunks (hit %v); the shards hold %d", len(cached), ok, len(want.Chunks))
	}
	read := func(what string) {
		t.Helper()
		fresh, err := Open(r.Root, nil) // no manifest held in memory
		if err != nil {
			t.Fatal(err)
		}
		m, err := fresh.Manifest("", "sub/x.bin")
		if err != nil || !reflect.DeepEqual(m, want) {
			t.Fatalf("%s: the manifest read differs from its shards' (%v)", what, err)
		}
	}
	read("cache hit")
	good, err := os.ReadFile(slot)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(slot, good[:len(good)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	read("truncated cache")
	if again, err := os.ReadFile(slot); err != nil || !bytes.Equal(again, good) {
		t.Fatalf("a reading that missed did not write the cache again (%v)", err)
	}
	// A good cache of another version of the file is not this version's.
	other := slices.Clone(want.Chunks)
	other[0].Size++
	if err := mcache.Save(slot, gitdb.Hash{1}, other); err != nil {
		t.Fatal(err)
	}
	read("cache of another root")

	// Reading another version than the checked-out one (gc and log read
	// every version) leaves the cache to the checked-out one.
	data[5<<20] ^= 1
	if err := os.WriteFile(x, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit(t.Context(), CommitOptions{Message: "again"}); err != nil {
		t.Fatal(err)
	}
	kept, err := os.ReadFile(slot)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := Open(r.Root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := fresh.Manifest("HEAD~1", "sub/x.bin"); err != nil || !reflect.DeepEqual(m, want) {
		t.Fatalf("HEAD~1's manifest read differs from its shards' (%v)", err)
	}
	if now, err := os.ReadFile(slot); err != nil || !bytes.Equal(now, kept) {
		t.Fatalf("reading HEAD~1 replaced the cache of the checked-out version (%v)", err)
	}
}

// TestFsckReadsShardsNotCache: with the manifest cache holding a split
// manifest's chunks, fsck still decodes its shards from Git, and a commit
// that lost one of them is a problem fsck reports.
func TestFsckReadsShardsNotCache(t *testing.T) {
	data := randomData(6<<20, 12)
	r := testRepo(t, data)
	lowerSplitAt(t, 3)
	data[1<<20] ^= 1
	if err := os.WriteFile(filepath.Join(r.Root, "sub", "x.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit(t.Context(), CommitOptions{Message: "split"}); err != nil {
		t.Fatal(err)
	}
	shards := gitFilesUnder(t, r.Root, "HEAD", manifest.ShardDir)
	if len(shards) < 2 {
		t.Fatalf("%d shards; want a split manifest", len(shards))
	}
	gitCLI(t, r.Root, nil, "rm", "-q", "--cached", shards[0])
	gitCLI(t, r.Root, nil, "commit", "-q", "-m", "lose a shard")
	fresh, err := Open(r.Root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.Manifest("", "sub/x.bin"); err != nil {
		t.Fatalf("the cache should still serve the root's chunks: %v", err)
	}
	res, err := fresh.Fsck(t.Context(), FsckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) == 0 {
		t.Fatal("fsck found nothing wrong with a split manifest missing a shard")
	}
	if p := res.Problems[0]; p.Path != "sub/x.bin" || !strings.Contains(p.Error, "shards do not match") {
		t.Fatalf("fsck problem %+v; want sub/x.bin's shards not matching its root", p)
	}
}
