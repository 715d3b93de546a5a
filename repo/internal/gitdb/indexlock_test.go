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
			rec, err := os.ReadFile(g.indexLockOwner())
			if err != nil {
				t.Fatalf("no owner record: %v", err)
			}
			f := strings.Fields(string(rec))
			if len(f) != 3 || f[0] != fmt.Sprint(os.Getpid()) {
				t.Fatalf("owner record %q", rec)
			}
			f[0] = fmt.Sprint(tc.pid(t))
			if err := os.WriteFile(g.indexLockOwner(), []byte(strings.Join(f, " ")+"\n"), 0o644); err != nil {
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
				if _, err := os.Stat(g.indexLockOwner()); !errors.Is(err, os.ErrNotExist) {
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
