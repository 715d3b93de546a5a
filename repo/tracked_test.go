package repo

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A path a revision has no manifest for is ErrNotTracked, with the
// message naming the path and the revision, for Manifest and Checkout.
func TestErrNotTracked(t *testing.T) {
	t.Setenv("GIT_AUTHOR_NAME", "Test")
	t.Setenv("GIT_AUTHOR_EMAIL", "test@example.com")
	dir := t.TempDir()
	r, err := Init(dir, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Track([]string{"*.bin"}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.bin"), []byte("chunkvc"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit(context.Background(), CommitOptions{Message: "v1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Manifest("", "a.bin"); err != nil {
		t.Fatalf("tracked file: %v", err)
	}
	_, err = r.Manifest("", "b.bin")
	if !errors.Is(err, ErrNotTracked) || err.Error() != "b.bin is not a tracked file in HEAD" {
		t.Errorf("Manifest of an untracked path: %v", err)
	}
	_, err = r.Checkout(context.Background(), CheckoutOptions{Paths: []string{"b.bin"}})
	if !errors.Is(err, ErrNotTracked) || err.Error() != "b.bin is not a tracked file in HEAD" {
		t.Errorf("Checkout of an untracked path: %v", err)
	}
}
