package lockfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/repo/internal/confine"
)

func TestAcquire(t *testing.T) {
	dir := t.TempDir()
	open := func() *confine.Tree { return confine.New(dir, ".git") }
	name := filepath.Join(dir, "lock")
	release, err := Acquire(open, "lock", name, 0)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(name); err != nil || !strings.HasPrefix(string(b), fmt.Sprint(os.Getpid(), " ")) {
		t.Fatalf("lock holds %q, %v; want this process", b, err)
	}
	// Held by a live process (this one): refused, naming the file.
	if _, err := Acquire(open, "lock", name, 0); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), name) {
		t.Fatalf("a held lock: %v", err)
	}
	release()
	if _, err := os.Stat(name); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("release left the lock: %v", err)
	}
	// Held by a process of this host that is gone: taken over.
	host, _ := os.Hostname()
	if err := os.WriteFile(name, fmt.Appendf(nil, "%d %s 2020-01-01T00:00:00Z\n", 1<<30, host), 0o644); err != nil {
		t.Fatal(err)
	}
	release, err = Acquire(open, "lock", name, 0)
	if err != nil {
		t.Fatalf("a stale lock: %v", err)
	}
	release()
	// Another host's: not ours to judge.
	if err := os.WriteFile(name, fmt.Appendf(nil, "%d other-%s 2020-01-01T00:00:00Z\n", 1<<30, host), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Acquire(open, "lock", name, 0); !errors.Is(err, ErrLocked) {
		t.Fatalf("another host's lock: %v", err)
	}
}
