package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
)

// startKilled runs chunkvc and SIGKILLs it after d (if still running).
func (r *runner) startKilled(t *testing.T, d time.Duration, args ...string) (killed bool) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir, cmd.Env = r.dir, r.env
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
		return false
	case <-time.After(d):
		cmd.Process.Signal(syscall.SIGKILL)
		<-done
		return cmd.ProcessState.ExitCode() == -1
	}
}

// killWhen runs chunkvc and SIGKILLs it as soon as ready reports true
// (polled every millisecond); it reports whether the kill came first.
func (r *runner) killWhen(t *testing.T, ready func() bool, args ...string) bool {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir, cmd.Env = r.dir, r.env
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	for {
		select {
		case <-done:
			return false
		case <-time.After(time.Millisecond):
		}
		if ready() {
			cmd.Process.Signal(syscall.SIGKILL)
			<-done
			return cmd.ProcessState.ExitCode() == -1
		}
	}
}

// Commits and checkouts killed with SIGKILL at random moments leave a
// repository that fsck passes, in which every commit restores exactly the
// bytes it recorded, and whose working file is always a whole version.
func TestKilledCommitsAndCheckoutsLoseNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("kills many processes")
	}
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "*.bin")
	rng := rand.New(rand.NewSource(1))
	versions := map[hashing.ID]bool{}
	for i := 0; i < 12; i++ {
		data := randomBytes(12<<20, int64(100+i))
		versions[hashing.Sum(data)] = true
		r.write("big.bin", data)
		r.startKilled(t, time.Duration(rng.Intn(900))*time.Millisecond, "commit", "-q", "-m", "v")
		// Check out an older commit, also killed at a random moment.
		if i%3 == 2 {
			r.startKilled(t, time.Duration(rng.Intn(300))*time.Millisecond, "checkout", "-q", "--force", "HEAD~1", "--", "big.bin")
			if b, err := os.ReadFile(r.path("big.bin")); err == nil && !versions[hashing.Sum(b)] {
				t.Fatalf("iteration %d: working file is not a whole version after a killed checkout", i)
			}
		}
	}
	// The repository still works: a commit that is not killed lands.
	last := randomBytes(1<<20, 999)
	versions[hashing.Sum(last)] = true
	r.write("big.bin", last)
	r.cv("commit", "-q", "-m", "after the kills")
	res := r.run(binary, "fsck", "--verify=full", "--json")
	if res.code != 0 {
		t.Fatalf("fsck after kills: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	var lg struct {
		Commits []struct{ Commit string } `json:"commits"`
	}
	if err := json.Unmarshal([]byte(r.cv("log", "--json")), &lg); err != nil {
		t.Fatal(err)
	}
	restored := 0
	for _, c := range lg.Commits {
		out := r.run(binary, "cat", c.Commit+":big.bin")
		if out.code != 0 {
			t.Fatalf("commit %.8s does not restore: %s", c.Commit, out.stderr)
		}
		if !versions[hashing.Sum([]byte(out.stdout))] {
			t.Fatalf("commit %.8s restores bytes that were never committed", c.Commit)
		}
		restored++
	}
	t.Logf("%d of 12 killed commits landed (plus one not killed); all restore exactly", restored-1)
	// git agrees the repository is sound.
	r.git("fsck", "--no-progress")
	// Debris as a killed checkout leaves it, whether or not one was left.
	r.write(".big.bin.chunkvc-tmp-0123456789ab", []byte("half a file"))
	left, _ := filepath.Glob(r.path(".big.bin.chunkvc-tmp-*"))
	r.cv("checkout", "--force")
	after, _ := filepath.Glob(r.path(".big.bin.chunkvc-tmp-*"))
	if len(after) != 0 {
		t.Fatalf("checkout left %d temp files (%d before it)", len(after), len(left))
	}
	if b := r.read("big.bin"); !bytes.Equal(b, []byte(r.cv("cat", "HEAD:big.bin"))) {
		t.Fatal("final checkout differs from HEAD")
	}
}

// A lock left by a killed process is taken over; one held by a live
// process makes the next command wait, then give up with exit 4 naming it.
func TestStaleAndLiveLocks(t *testing.T) {
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "*.bin")
	r.write("a.bin", randomBytes(1000, 1))
	host, _ := os.Hostname()
	// A dead process: start and reap one, then claim its pid.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	lock := r.path(".git/chunkvc/lock")
	if err := os.WriteFile(lock, []byte(fmt.Sprintf("%d %s 2026-01-01T00:00:00Z\n", dead.Process.Pid, host)), 0o644); err != nil {
		t.Fatal(err)
	}
	r.cv("commit", "-m", "after a stale lock")
	if _, err := os.Stat(lock); !os.IsNotExist(err) {
		t.Fatal("lock file left behind")
	}
	// A live holder: this test process.
	if err := os.WriteFile(lock, []byte(fmt.Sprintf("%d %s 2026-01-01T00:00:00Z\n", os.Getpid(), host)), 0o644); err != nil {
		t.Fatal(err)
	}
	r.env = append(r.env, "CHUNKVC_LOCK_WAIT=300ms")
	r.write("a.bin", randomBytes(1000, 2))
	start := time.Now()
	res := r.run(binary, "commit", "-m", "while locked")
	if res.code != exitRefused || !strings.Contains(res.stderr, fmt.Sprint(os.Getpid())) || time.Since(start) < 300*time.Millisecond {
		t.Fatalf("commit under a live lock: exit %d after %v\n%s", res.code, time.Since(start), res.stderr)
	}
	os.Remove(lock)
	r.cv("commit", "-m", "lock released")

	// Git's own lock on its index: refused too, the index and HEAD left
	// to the git command that holds it.
	gitLock := r.path(".git/index.lock")
	if err := os.WriteFile(gitLock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	head := r.git("rev-parse", "HEAD")
	r.write("a.bin", randomBytes(1000, 3))
	res = r.run(binary, "commit", "-m", "while git holds its index")
	if res.code != exitRefused || !strings.Contains(res.stderr, "index.lock") || r.git("rev-parse", "HEAD") != head {
		t.Fatalf("commit while git holds index.lock: exit %d, HEAD moved: %v\n%s", res.code, r.git("rev-parse", "HEAD") != head, res.stderr)
	}
	os.Remove(gitLock)
	r.cv("commit", "-m", "git's lock released")
}

// gc killed at random moments while it rewrites packs (dropping garbage,
// re-encoding deltas whose base is garbage) loses nothing a ref needs.
func TestKilledGCLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("kills many processes")
	}
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "*.bin")
	rng := rand.New(rand.NewSource(2))
	data := randomBytes(16<<20, 7)
	r.write("big.bin", data)
	r.cv("commit", "-q", "-m", "v0")
	branch := strings.TrimSpace(r.git("branch", "--show-current"))
	kills := 0
	for i := 0; i < 10; i++ {
		// Small edits: their chunks are stored as deltas against the old ones.
		for j := 0; j < 3; j++ {
			copy(data[rng.Intn(len(data)-100):], randomBytes(100, int64(1000+10*i+j)))
		}
		r.write("big.bin", data)
		r.cv("commit", "-q", "-m", fmt.Sprint("v", i+1))
		// History cut down to this version: everything else is garbage,
		// the bases of its deltas included.
		r.git("checkout", "-q", "--orphan", "cut")
		r.git("commit", "-q", "-m", "alone")
		r.git("branch", "-q", "-M", branch)
		r.git("reflog", "expire", "--expire=now", "--all")
		if r.startKilled(t, time.Duration(rng.Intn(100))*time.Millisecond, "gc", "-q", "--grace", "0s") {
			kills++
		}
		if out := r.run(binary, "cat", "HEAD:big.bin"); out.code != 0 || out.stdout != string(data) {
			t.Fatalf("iteration %d: HEAD does not restore after a killed gc: exit %d %s", i, out.code, out.stderr)
		}
	}
	t.Logf("%d of 10 gc runs killed before they finished", kills)
	if kills == 0 {
		t.Fatal("no gc was killed: the test proves nothing")
	}
	var g gcResult
	r.jsonOf(&g, "gc", "--grace", "0s")
	if res := r.run(binary, "fsck", "--verify=full"); res.code != 0 {
		t.Fatalf("fsck after killed gcs: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if got := r.cv("cat", "HEAD:big.bin"); got != string(data) {
		t.Fatal("HEAD does not restore after the last gc")
	}
	r.jsonOf(&g, "gc", "--grace", "0s")
	if st := g.Stores[0]; st.Deleted != 0 || st.Kept != st.Objects {
		t.Errorf("a second gc still finds garbage: %+v", st)
	}
}
