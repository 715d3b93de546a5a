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
			lk.f.Close() // killed: the lock and its owner name stay
			owners := lockOwners{g.gitDir}
			passOwner(t, owners, lock, tc.pid(t))
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
				if left := owners.owners(lock); len(left) != 0 {
					t.Fatalf("owner names left: %v", left)
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
	f.Close() // killed: the lock and its owner name stay
	passOwner(t, owners, lock, deadPid(t))
	if err := rs.Update(Update{Name: "refs/heads/main", Old: hs[1], New: hs[0], Message: "commit: x", Who: who}); err != nil {
		t.Fatalf("update over a killed chunkvc's lock: %v", err)
	}
	if got := git(t, dir, "rev-parse", "main"); got != hs[0].String() {
		t.Fatalf("main = %s, want %s", got, hs[0])
	}
	if left := owners.owners(lock); len(left) != 0 {
		t.Fatalf("owner names left: %v", left)
	}
	// git's own lock (no record) still refuses.
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := rs.Update(Update{Name: "refs/heads/main", Old: hs[0], New: hs[1], Message: "commit: y", Who: who}); !errors.Is(err, ErrRefLocked) {
		t.Fatalf("update over git's lock = %v, want ErrRefLocked", err)
	}
}

// passOwner hands this process's owner name of lock to process pid, as
// if pid had made the lock: the name must exist and be the lock's very
// file from the moment createLock returned it (no window in which a
// killed chunkvc leaves a lock nobody owns).
func passOwner(t *testing.T, owners lockOwners, lock string, pid int) {
	t.Helper()
	fi, err := os.Lstat(lock)
	if err != nil {
		t.Fatal(err)
	}
	var mine []owner
	for _, w := range owners.owners(lock) {
		if w.pid == os.Getpid() {
			mine = append(mine, w)
		}
	}
	if len(mine) != 1 {
		t.Fatalf("owner names of this process for %s: %v, want one", lock, mine)
	}
	wfi, err := os.Lstat(mine[0].path)
	if err != nil || !os.SameFile(fi, wfi) {
		t.Fatalf("owner name %s is not the lock file itself (%v)", mine[0].path, err)
	}
	to := strings.Replace(mine[0].path, fmt.Sprintf(".%d.", os.Getpid()), fmt.Sprintf(".%d.", pid), 1)
	if err := os.Rename(mine[0].path, to); err != nil {
		t.Fatal(err)
	}
}

// A lock an earlier chunkvc made, with its one-line record written after
// it ("pid host inode"), is still taken over when that process is gone.
func TestEarlierVersionsRecordIsHonoured(t *testing.T) {
	dir, hs := newRepo(t)
	gitDir := filepath.Join(dir, ".git")
	lock := filepath.Join(gitDir, "refs", "heads", "main.lock")
	owners := lockOwners{gitDir}
	f, err := plainLock(lock)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	fi, err := os.Lstat(lock)
	if err != nil {
		t.Fatal(err)
	}
	ino, ok := fileIdentity(fi)
	if !ok {
		t.Fatal("no inode")
	}
	host, _ := os.Hostname()
	if err := os.MkdirAll(filepath.Dir(owners.record(lock)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(owners.record(lock), fmt.Appendf(nil, "%d %s %d\n", deadPid(t), host, ino), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := NewRefs(gitDir).Update(Update{Name: "refs/heads/main", Old: hs[1], New: hs[0], Message: "commit: x", Who: who}); err != nil {
		t.Fatalf("update over an earlier chunkvc's recorded lock: %v", err)
	}
	if _, err := os.Stat(owners.record(lock)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("record left: %v", err)
	}
}
