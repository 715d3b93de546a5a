//go:build unix

package gitdb

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// deadPid is the pid of a process that has exited and been reaped.
func deadPid(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	return c.Process.Pid
}

// TestKilledChunkvcIndexLockIsTakenOver: index.lock left by a chunkvc
// that is gone is removed by the next write of the index; one whose maker
// lives, or a lock file that is not the one recorded (git's, made after),
// stays and refuses the write, as git's own lock does.
func TestKilledChunkvcIndexLockIsTakenOver(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pid      func(t *testing.T) int
		replace  bool // another file takes the lock's name
		takeOver bool
	}{
		{"maker gone", deadPid, false, true},
		{"maker alive", func(*testing.T) int { return os.Getpid() }, false, false},
		{"another lock file", deadPid, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := gitIndexRepo(t)
			g, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			lock := filepath.Join(dir, ".git", "index.lock")
			lk, err := g.lockIndex()
			if err != nil {
				t.Fatal(err)
			}
			lk.f.Close() // killed: the lock and its record stay
			owners := lockOwners{g.gitDir}
			rec, err := os.ReadFile(owners.record(lock))
			if err != nil {
				t.Fatalf("no owner record: %v", err)
			}
			f := strings.Fields(string(rec))
			if len(f) != 3 || f[0] != fmt.Sprint(os.Getpid()) {
				t.Fatalf("owner record %q", rec)
			}
			f[0] = fmt.Sprint(tc.pid(t))
			if err := os.WriteFile(owners.record(lock), []byte(strings.Join(f, " ")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.replace {
				// A new file, made before the old one goes: another inode.
				if err := os.WriteFile(lock+".new", []byte("git's"), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(lock+".new", lock); err != nil {
					t.Fatal(err)
				}
			}
			err = g.setIndex(goGitIndex(t, dir))
			_, lockErr := os.Stat(lock)
			if tc.takeOver {
				if err != nil || !errors.Is(lockErr, os.ErrNotExist) {
					t.Fatalf("setIndex = %v, index.lock: %v; want the stale lock taken over and released", err, lockErr)
				}
				if _, err := os.Stat(owners.record(lock)); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("owner record left: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrGitLocked) || lockErr != nil {
				t.Fatalf("setIndex = %v, index.lock: %v; want ErrGitLocked and the lock left alone", err, lockErr)
			}
		})
	}
}

// TestKilledChunkvcRefLockIsTakenOver: a ref's lock left by a chunkvc that
// is gone does not stop the next update; one git left (no record) does.
func TestKilledChunkvcRefLockIsTakenOver(t *testing.T) {
	dir, hs := newRepo(t)
	gitDir := filepath.Join(dir, ".git")
	rs := NewRefs(gitDir)
	lock := filepath.Join(gitDir, "refs", "heads", "main.lock")
	owners := lockOwners{gitDir}
	f, err := owners.createLock(lock)
	if err != nil {
		t.Fatal(err)
	}
	f.Close() // killed: the lock and its record stay
	rec, err := os.ReadFile(owners.record(lock))
	if err != nil {
		t.Fatalf("no owner record: %v", err)
	}
	fs := strings.Fields(string(rec))
	fs[0] = fmt.Sprint(deadPid(t))
	if err := os.WriteFile(owners.record(lock), []byte(strings.Join(fs, " ")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := rs.Update(Update{Name: "refs/heads/main", Old: hs[1], New: hs[0], Message: "commit: x", Who: who}); err != nil {
		t.Fatalf("update over a killed chunkvc's lock: %v", err)
	}
	if got := git(t, dir, "rev-parse", "main"); got != hs[0].String() {
		t.Fatalf("main = %s, want %s", got, hs[0])
	}
	if _, err := os.Stat(owners.record(lock)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("owner record left: %v", err)
	}
	// git's own lock (no record) still refuses.
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := rs.Update(Update{Name: "refs/heads/main", Old: hs[0], New: hs[1], Message: "commit: y", Who: who}); !errors.Is(err, ErrRefLocked) {
		t.Fatalf("update over git's lock = %v, want ErrRefLocked", err)
	}
}
