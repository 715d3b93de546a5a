package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/internal/miniotest"
)

// soakBudget is how long each store's kill loop runs: with CHUNKVC_SOAK (a
// Go duration; make soak sets minutes) that long; else until soakKills
// commands were killed, at most 100 s (the suite's share), at least 20 s.
type soakBudget struct {
	min, max time.Duration
	kills    int
}

const soakKills = 150

func budgetOf() soakBudget {
	if d, err := time.ParseDuration(os.Getenv("CHUNKVC_SOAK")); err == nil && d > 0 {
		return soakBudget{min: d, max: d}
	}
	return soakBudget{min: 20 * time.Second, max: 100 * time.Second, kills: soakKills}
}

// more reports whether the loop goes on, started at start with kills so far.
func (b soakBudget) more(start time.Time, kills int) bool {
	el := time.Since(start)
	return el < b.min || el < b.max && kills < b.kills
}

// soakStats are the figures a soak reports.
type soakStats struct {
	Elapsed                 time.Duration
	Runs, Kills             int
	KillsByOp               map[string]int
	CommitsReported         int // exit 0 with a commit id
	CommitsLandedKilled     int // killed, yet HEAD moved to the commit
	Refusals, LocksCleared  int
	VersionsChecked, Losses int
}

// soak drives one writer (a) and one reader clone (b) sharing a store and
// a bare Git remote, killing their commands at random moments, and
// remembers every commit that was made and what it recorded.
type soak struct {
	t        *testing.T
	rng      *rand.Rand
	a, b     *runner
	files    map[string][]byte                // a's tracked files as the test wrote them
	versions map[string]map[string]hashing.ID // commit → path → digest
	order    []string                         // commits in the order they were made
	est      map[string]time.Duration         // typical run time of an op not killed
	seq      int
	st       soakStats
	trail    []string // what ran, for a failure's message
}

var lockInMessage = regexp.MustCompile(`(/[^\s'"]*\.lock)\b`)

// run runs a chunkvc command, killed after a random fraction of its usual
// run time (never, one time in four, so the estimate stays current). It
// clears a lock a killed process left behind and runs it again when the
// command refuses because of one, as a user would after checking no git
// is running.
func (s *soak) run(r *runner, op string, args ...string) (res result, killed bool) {
	s.t.Helper()
	for attempt := 0; ; attempt++ {
		est := s.est[op]
		if est == 0 {
			est = 200 * time.Millisecond
		}
		var limit time.Duration
		if s.rng.Intn(4) != 0 {
			limit = time.Duration(s.rng.Int63n(int64(est)*3/2 + 1))
		}
		start := time.Now()
		res, killed = r.runKilled(s.t, limit, args...)
		s.trail = append(s.trail, fmt.Sprintf("%s %s %v: exit %d killed %v after %v", time.Now().Format("05.000000"), filepath.Base(r.dir), args, res.code, killed, limit))
		s.st.Runs++
		if killed {
			s.st.Kills++
			s.st.KillsByOp[op]++
			return res, true
		}
		if res.code == 0 {
			s.est[op] = (3*est + time.Since(start)) / 4
		}
		if res.code != exitRefused || attempt > 3 {
			return res, false
		}
		s.st.Refusals++
		m := lockInMessage.FindStringSubmatch(res.stderr)
		if m == nil || !strings.HasPrefix(m[1], r.dir) {
			return res, false
		}
		if err := os.Remove(m[1]); err == nil {
			s.st.LocksCleared++
		}
	}
}

// snapshot is the digest of every file the writer holds.
func (s *soak) snapshot() map[string]hashing.ID {
	out := make(map[string]hashing.ID, len(s.files))
	for p, b := range s.files {
		out[p] = hashing.Sum(b)
	}
	return out
}

func (s *soak) head(r *runner) string {
	res := r.run("git", "rev-parse", "-q", "--verify", "HEAD")
	return strings.TrimSpace(res.stdout)
}

// edit changes a few bytes of the big file and sometimes a small one or
// a new file, as a pipeline's nightly run would.
func (s *soak) edit() {
	big := s.files["big.bin"]
	for range 1 + s.rng.Intn(3) {
		off := s.rng.Intn(len(big) - 4096)
		copy(big[off:], randomBytes(1+s.rng.Intn(4096), s.rng.Int63()))
	}
	s.a.write("big.bin", big)
	if s.rng.Intn(3) == 0 {
		p := fmt.Sprintf("small/%d.bin", s.rng.Intn(6))
		s.files[p] = randomBytes(1+s.rng.Intn(96<<10), s.rng.Int63())
		s.a.write(p, s.files[p])
		s.trail = append(s.trail, fmt.Sprintf("%s edit %s: %d bytes %.8s", time.Now().Format("05.000000"), p, len(s.files[p]), hashing.Sum(s.files[p])))
	}
}

func (s *soak) commit() {
	s.edit()
	s.seq++
	msg := fmt.Sprintf("v%d", s.seq)
	before := s.head(s.a)
	snap := s.snapshot()
	res, killed := s.run(s.a, "commit", "commit", "--json", "-q", "-m", msg)
	switch {
	case killed:
		if h := s.head(s.a); h != before && strings.TrimSpace(s.a.git("log", "-1", "--format=%s", h)) == msg {
			s.record(h, snap)
			s.st.CommitsLandedKilled++
		}
	case res.code == 0:
		var c commitResult
		if err := json.Unmarshal([]byte(res.stdout), &c); err != nil {
			s.t.Fatalf("commit --json: %v\n%s", err, res.stdout)
		}
		if c.Commit == "" {
			return
		}
		if h := s.head(s.a); h != c.Commit {
			s.t.Fatalf("commit reported %s but HEAD is %s", c.Commit, h)
		}
		s.record(c.Commit, snap)
		s.st.CommitsReported++
		s.checkCommitted(c.Commit, snap)
	case res.code == 1 && strings.Contains(res.stderr, "nothing to commit"):
	default:
		s.t.Fatalf("commit %s: exit %d\n%s", msg, res.code, res.stderr)
	}
}

// checkCommitted compares what a commit reported as made recorded with
// what the files held: at once, so that a failure names the moment.
func (s *soak) checkCommitted(commit string, snap map[string]hashing.ID) {
	s.t.Helper()
	for p, id := range snap {
		m := s.a.git("show", commit+":.chunkvc/manifests/"+p)
		if !strings.Contains(m, "digest blake3:"+id.String()+"\n") {
			disk := hashing.Sum(s.a.read(p))
			s.t.Fatalf("commit %.8s recorded %s as\n%s\nbut the test wrote %s (on disk now: %s)", commit, p, m, id, disk)
		}
	}
}

func (s *soak) record(commit string, snap map[string]hashing.ID) {
	if _, ok := s.versions[commit]; !ok {
		s.order = append(s.order, commit)
	}
	s.versions[commit] = snap
}

// checkout writes an older version of the big file, killed at random,
// then puts HEAD's back (not killed) and checks it is HEAD's exactly.
func (s *soak) checkout() {
	if len(s.order) == 0 {
		return
	}
	old := s.order[s.rng.Intn(len(s.order))]
	s.run(s.a, "checkout", "checkout", "-q", "--force", old, "--", "big.bin")
	if b, err := os.ReadFile(s.a.path("big.bin")); err == nil && !s.isVersion("big.bin", hashing.Sum(b)) && hashing.Sum(b) != hashing.Sum(s.files["big.bin"]) {
		s.t.Fatalf("a killed checkout left big.bin as no version")
	}
	s.trail = append(s.trail, time.Now().Format("05.000000")+" checkout --force HEAD")
	if res, _ := s.runUnkilled(s.a, "checkout", "-q", "--force", "HEAD"); res.code != 0 {
		s.t.Fatalf("checkout --force HEAD after a killed checkout: exit %d\n%s", res.code, res.stderr)
	}
	head := s.head(s.a)
	for p := range s.files {
		s.files[p] = s.a.read(p)
		if want, ok := s.versions[head][p]; ok && hashing.Sum(s.files[p]) != want {
			s.t.Fatalf("%s after checkout of HEAD %.8s differs from what HEAD recorded", p, head)
		}
	}
}

func (s *soak) runUnkilled(r *runner, args ...string) (result, bool) {
	est := s.est
	s.est = map[string]time.Duration{}
	defer func() { s.est = est }()
	for {
		res, killed := r.runKilled(s.t, 0, args...)
		if res.code != exitRefused {
			return res, killed
		}
		m := lockInMessage.FindStringSubmatch(res.stderr)
		if m == nil || os.Remove(m[1]) != nil {
			return res, killed
		}
		s.st.LocksCleared++
	}
}

func (s *soak) isVersion(p string, id hashing.ID) bool {
	for _, v := range s.versions {
		if v[p] == id {
			return true
		}
	}
	return false
}

func (s *soak) push() { s.run(s.a, "push", "push", "-q") }

func (s *soak) pull() {
	res, killed := s.run(s.b, "pull", "pull", "-q")
	if !killed && res.code != 0 {
		s.t.Fatalf("pull: exit %d\n%s", res.code, res.stderr)
	}
}

func (s *soak) gc() {
	res, killed := s.run(s.a, "gc", "gc", "-q", "--grace", "0s", "--force")
	if !killed && res.code != 0 {
		s.t.Fatalf("gc: exit %d\n%s", res.code, res.stderr)
	}
}

// verify checks that every version recorded is reachable from a ref or a
// reflog entry, that its manifests name the digests it recorded (read in
// one git cat-file), that each distinct file version restores exactly
// (chunkvc cat), and that git fsck and chunkvc fsck --verify=full pass.
func (s *soak) verify(r *runner) {
	s.t.Helper()
	reach := map[string]bool{}
	for _, h := range strings.Fields(r.git("rev-list", "--all", "--reflog")) {
		reach[h] = true
	}
	type want struct {
		commit, path string
		id           hashing.ID
	}
	var wants []want
	for _, c := range s.order {
		if !reach[c] {
			s.st.Losses++
			s.t.Errorf("commit %.8s is reachable from no ref or reflog entry", c)
			continue
		}
		for p, id := range s.versions[c] {
			wants = append(wants, want{c, p, id})
		}
		s.st.VersionsChecked++
	}
	var in strings.Builder
	for _, w := range wants {
		fmt.Fprintf(&in, "%s:.chunkvc/manifests/%s\n", w.commit, w.path)
	}
	cmd := exec.Command("git", "cat-file", "--batch")
	cmd.Dir, cmd.Env, cmd.Stdin = r.dir, r.env, strings.NewReader(in.String())
	out, err := cmd.Output()
	if err != nil {
		s.t.Fatal("git cat-file --batch: ", err)
	}
	digests := regexp.MustCompile(`(?m)^digest blake3:([0-9a-f]{64})$|^\S+ missing$`).FindAllStringSubmatch(string(out), -1)
	if len(digests) != len(wants) {
		s.t.Fatalf("git cat-file gave %d manifests for %d file versions", len(digests), len(wants))
	}
	restored := map[hashing.ID]bool{}
	for i, w := range wants {
		if digests[i][1] != w.id.String() {
			s.st.Losses++
			s.t.Errorf("commit %.8s records %s as %q, not the %s committed", w.commit, w.path, digests[i][0], w.id)
			continue
		}
		if restored[w.id] {
			continue
		}
		res := r.run(binary, "cat", w.commit+":"+w.path)
		if res.code != 0 || hashing.Sum([]byte(res.stdout)) != w.id {
			s.st.Losses++
			s.t.Errorf("commit %.8s does not restore %s: exit %d %s", w.commit, w.path, res.code, res.stderr)
		}
		restored[w.id] = true
	}
	r.git("fsck", "--strict", "--no-dangling", "--no-progress")
	if res := r.run(binary, "fsck", "--verify=full"); res.code != 0 {
		s.t.Fatalf("chunkvc fsck --verify=full: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
}

// soakRun runs the kill loop for budget with the given store URL and
// extra environment.
func soakRun(t *testing.T, storeURL string, extraEnv []string, budget soakBudget) soakStats {
	s := &soak{t: t, rng: rand.New(rand.NewSource(time.Now().UnixNano())),
		files: map[string][]byte{}, versions: map[string]map[string]hashing.ID{},
		est: map[string]time.Duration{}, st: soakStats{KillsByOp: map[string]int{}}}
	s.a = newRunner(t)
	s.a.env = append(s.a.env, extraEnv...)
	bare := filepath.Join(t.TempDir(), "origin.git")
	s.a.git("init", "-q", "--bare", "-b", "main", bare)
	s.a.git("init", "-q", "-b", "main")
	s.a.cv("init", "--store", storeURL)
	s.a.cv("track", "*.bin")
	s.files["big.bin"] = randomBytes(4<<20, 1)
	s.a.write("big.bin", s.files["big.bin"])
	s.commitUnkilled()
	s.a.git("remote", "add", "origin", bare)
	s.a.cv("push", "-q")
	s.b = newRunner(t)
	s.b.env = s.a.env
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("what ran, in order:\n%s", strings.Join(s.trail, "\n"))
		}
	})
	if keep := os.Getenv("CHUNKVC_SOAK_KEEP"); keep != "" {
		// A failure's repositories, for a post-mortem.
		t.Cleanup(func() {
			if t.Failed() {
				dst := filepath.Join(keep, t.Name())
				os.MkdirAll(dst, 0o755)
				exec.Command("cp", "-a", s.a.dir, filepath.Join(dst, "a")).Run()
				exec.Command("cp", "-a", filepath.Dir(s.b.dir), filepath.Join(dst, "b")).Run()
				if u := storeURL; strings.HasPrefix(u, "/") {
					exec.Command("cp", "-a", u, filepath.Join(dst, "store")).Run()
				}
				t.Logf("repositories kept in %s", dst)
			}
		})
	}
	s.b.cv("clone", "-q", "--trust-store", bare, "b")
	s.b.dir = s.b.path("b")

	ops := []struct {
		weight int
		fn     func()
	}{{8, s.commit}, {2, s.checkout}, {2, s.push}, {2, s.pull}, {2, s.gc}}
	total := 0
	for _, o := range ops {
		total += o.weight
	}
	start := time.Now()
	for budget.more(start, s.st.Kills) {
		n := s.rng.Intn(total)
		for _, o := range ops {
			if n -= o.weight; n < 0 {
				o.fn()
				break
			}
		}
	}
	s.st.Elapsed = time.Since(start)
	// Settle: a commit, a push and a pull that are not killed land.
	s.edit()
	s.commitUnkilled()
	if res, _ := s.runUnkilled(s.a, "push", "-q"); res.code != 0 {
		t.Fatalf("final push: exit %d\n%s", res.code, res.stderr)
	}
	if res, _ := s.runUnkilled(s.b, "pull", "-q"); res.code != 0 {
		t.Fatalf("final pull: exit %d\n%s", res.code, res.stderr)
	}
	s.verify(s.a)
	for p, id := range s.versions[s.head(s.a)] {
		if hashing.Sum(s.b.read(p)) != id {
			t.Errorf("the reader clone's %s is not the pushed version", p)
		}
	}
	return s.st
}

func (s *soak) commitUnkilled() {
	s.seq++
	snap := s.snapshot()
	res, _ := s.runUnkilled(s.a, "commit", "--json", "-q", "-m", fmt.Sprintf("v%d", s.seq))
	var c commitResult
	if res.code != 0 || json.Unmarshal([]byte(res.stdout), &c) != nil || c.Commit == "" {
		s.t.Fatalf("commit: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	s.record(c.Commit, snap)
	s.st.CommitsReported++
}

// runKilled runs chunkvc and SIGKILLs it after limit (0: never); killed
// says the kill came before the command ended.
func (r *runner) runKilled(t *testing.T, limit time.Duration, args ...string) (result, bool) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir, cmd.Env = r.dir, r.env
	// Its own process group, so that the git commands a killed chunkvc
	// leaves running can be waited for: the kill models chunkvc dying,
	// not git, and the next command must not race them.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
			if !groupAlive(cmd.Process.Pid) {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Error("git commands of a killed chunkvc still run after 30s")
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var timer <-chan time.Time
	if limit > 0 {
		timer = time.After(limit)
	}
	killed := false
	var err error
	select {
	case err = <-done:
	case <-timer:
		cmd.Process.Signal(syscall.SIGKILL)
		err = <-done
		killed = cmd.ProcessState.ExitCode() == -1
	}
	res := result{stdout: so.String(), stderr: se.String(), code: cmd.ProcessState.ExitCode()}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return res, killed
}

// groupAlive reports whether a process of group pgid still runs (zombies,
// which a container's first process may never reap, do not count).
func groupAlive(pgid int) bool {
	if syscall.Kill(-pgid, 0) != nil {
		return false
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp …; comm may hold spaces and parens.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 2 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			return true
		}
	}
	return false
}

// Commands killed with SIGKILL at random moments, hundreds of times, lose
// no commit: every commit ever reported as made (or found made after its
// process was killed) stays reachable from its branch or a reflog entry
// and restores exactly the bytes it recorded, and git fsck --strict and
// chunkvc fsck --verify=full pass. Against a local store and MinIO.
func TestSoakKilledCommandsLoseNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("kills hundreds of processes")
	}
	budget := budgetOf()
	stores := []struct {
		name string
		url  func(t *testing.T) (string, []string)
	}{
		{"local", func(t *testing.T) (string, []string) { return filepath.Join(t.TempDir(), "chunks"), nil }},
		{"minio", func(t *testing.T) (string, []string) {
			srv := miniotest.Start(t)
			return "s3://chunkvc-soak/x", append(srv.Env(), "CHUNKVC_S3_TIMEOUT=5s", "CHUNKVC_S3_RETRY_TIME=10s")
		}},
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			url, env := st.url(t)
			stats := soakRun(t, url, env, budget)
			ops := make([]string, 0, len(stats.KillsByOp))
			for op, n := range stats.KillsByOp {
				ops = append(ops, fmt.Sprintf("%s %d", op, n))
			}
			slices.Sort(ops)
			t.Logf("%s store, %v: %d runs, %d killed (%s); %d commits reported, %d more landed although killed; "+
				"%d refusals, %d stale locks cleared; %d versions checked, %d lost",
				st.name, stats.Elapsed.Round(time.Second), stats.Runs, stats.Kills, strings.Join(ops, ", "), stats.CommitsReported,
				stats.CommitsLandedKilled, stats.Refusals, stats.LocksCleared, stats.VersionsChecked, stats.Losses)
			// A floor that tells a harness that kills nothing from a slow
			// machine: make test runs the packages' tests side by side on
			// two cores, and a loaded MinIO run killed 89 in its 100 s.
			if stats.Kills < min(soakKills/3, int(stats.Elapsed/(time.Second))) {
				t.Errorf("only %d commands were killed: the soak proves too little", stats.Kills)
			}
		})
	}
}
