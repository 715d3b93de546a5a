package repo

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/repo/internal/registry"
	"github.com/chunkvc/chunkvc/store/local"
)

// A commit made whose manifest copies then fail, and whose registry entry
// fails too, reports both: the second warns that gc elsewhere may take the
// commit's chunks.
func TestCommitReportsRegistryAfterManifestFailure(t *testing.T) {
	r := testRepo(t, randomData(100000, 1))
	// The entry cannot be written: a file where its folder goes.
	repos := filepath.Join(r.gitDir(), "chunkvc", "store", local.NamedDir, registry.Dir)
	if err := os.RemoveAll(repos); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(repos, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// The deleted file's manifest cannot be removed: a folder with a file
	// in it stands in its place.
	if err := os.Remove(filepath.Join(r.Root, "sub", "x.bin")); err != nil {
		t.Fatal(err)
	}
	m := r.abs(manifestPath("sub/x.bin"))
	if err := os.Remove(m); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(m, "in-the-way"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := r.Commit(context.Background(), CommitOptions{Message: "delete"})
	if err == nil || !strings.Contains(err.Error(), "removing the manifests") || !strings.Contains(err.Error(), "gc in other repositories") {
		t.Errorf("commit: %v; want the manifest failure and the registry's", err)
	}
}
