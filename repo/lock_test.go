package repo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLockEmptyFile: the lock is made whole (holder written before it
// appears); an empty lock, left by a chunkvc killed before it wrote its
// holder, is taken over once it is old, and respected while it may still
// be being written.
func TestLockEmptyFile(t *testing.T) {
	r := testRepo(t, randomData(1000, 3))
	t.Setenv("CHUNKVC_LOCK_WAIT", "0s")
	unlock, err := r.lock()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := r.stateDir()
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(dir, "lock")
	if b, err := os.ReadFile(name); err != nil || !strings.HasPrefix(string(b), fmt.Sprint(os.Getpid(), " ")) {
		t.Fatalf("lock holds %q, %v; want this process", b, err)
	}
	unlock()
	if err := os.WriteFile(name, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.lock(); !errors.Is(err, ErrLocked) {
		t.Fatalf("lock over a fresh empty lock: %v, want ErrLocked", err)
	}
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(name, old, old); err != nil {
		t.Fatal(err)
	}
	unlock, err = r.lock()
	if err != nil {
		t.Fatalf("lock over an old empty lock: %v", err)
	}
	unlock()
	if left, _ := filepath.Glob(filepath.Join(dir, ".lock.chunkvc-tmp-*")); len(left) > 0 {
		t.Errorf("temp files left: %v", left)
	}
}
