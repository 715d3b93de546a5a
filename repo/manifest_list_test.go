package repo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
	"github.com/chunkvc/chunkvc/repo/internal/statcache"
)

// TestStatusReadsListing: a commit saves the listing of its tree's
// manifests, status reads HEAD's manifests from it rather than from the
// tree objects, and a listing saved for another tree is not taken for
// HEAD's (git moved HEAD behind chunkvc's back).
func TestStatusReadsListing(t *testing.T) {
	r := testRepo(t, randomData(3000, 1))
	for _, p := range []string{"a.bin", "sub/deep/y.bin", "sub-z.bin"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(r.Root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(r.Root, p), randomData(2000, int64(len(p))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Commit(t.Context(), CommitOptions{Message: "more"}); err != nil {
		t.Fatal(err)
	}
	tree := func() gitdb.Hash {
		h, err := gitdb.ParseHash(strings.TrimSpace(string(gitCLI(t, r.Root, nil, "rev-parse", "HEAD^{tree}"))))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	lists, ok := statcache.LoadListing(r.gitTree(), tree(), listedDirs())
	if !ok || len(lists[0]) != 4 {
		t.Fatalf("the commit saved no listing of its 4 manifests: %v", lists)
	}
	status := func(want string) {
		t.Helper()
		st, err := r.Status(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range st {
			got = append(got, string(e.Status)+" "+e.Path)
		}
		if strings.Join(got, ", ") != want {
			t.Fatalf("status: %q, want %q", got, want)
		}
	}
	status("")

	// git commits a.bin's manifest away: HEAD's tree is not the one the
	// listing is for.
	gitCLI(t, r.Root, nil, "rm", "-q", "--cached", manifestPath("a.bin"))
	gitCLI(t, r.Root, nil, "commit", "-q", "-m", "by git")
	status("added a.bin")

	// Status saved the listing of the new tree: its tree objects are not
	// read again.
	sub := strings.TrimSpace(string(gitCLI(t, r.Root, nil, "rev-parse", "HEAD:"+ManifestDir+"/sub")))
	obj := filepath.Join(r.Root, ".git", "objects", sub[:2], sub[2:])
	if err := os.Remove(obj); err != nil {
		t.Fatal(err)
	}
	status("added a.bin")
}
