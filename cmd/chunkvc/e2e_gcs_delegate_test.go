package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// plainCopy is the everyday binary (no gcs tag) alone in a new directory,
// with companion, when not "", beside it as chunkvc-gcs.
func plainCopy(t *testing.T, companion string) string {
	t.Helper()
	dir := t.TempDir()
	self := filepath.Join(dir, "chunkvc")
	b, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(self, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if companion != "" {
		if err := os.WriteFile(filepath.Join(dir, "chunkvc-gcs"), []byte(companion), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return self
}

// gcsRepo is a repository with a committed file whose committed
// .chunkvc/config names a gs:// store (no bucket behind it: the commands
// here either never reach it or are handed over first).
func gcsRepo(t *testing.T, r *runner) {
	t.Helper()
	r.write("a.bin", randomBytes(1000, 1))
	r.cv("init")
	r.cv("track", "*.bin")
	r.cv("commit", "-q", "-m", "v1")
	cfg := append(r.read(".chunkvc/config"), "store = gs://nowhere/prefix\n"...)
	r.write(".chunkvc/config", cfg)
	r.git("commit", "-q", "-am", "store on gs://")
}

// The everyday chunkvc hands what needs a gs:// store to chunkvc-gcs
// beside it, with the same arguments: a gs:// URL argument, any command
// but status, log and ls-files in a repository on gs:// (from inside or
// with -C), and clone; everything else it runs itself.
func TestGCSHandedToCompanion(t *testing.T) {
	self := plainCopy(t, "#!/bin/sh\necho \"gcs build got: $* ($CHUNKVC_GCS_DELEGATED)\"\n")
	r := newRunner(t)
	gcsRepo(t, r)
	handed := func(args ...string) {
		t.Helper()
		res := r.run(self, args...)
		if want := "gcs build got: " + strings.Join(args, " ") + " (1)\n"; res.code != 0 || res.stdout != want {
			t.Errorf("%v not handed to chunkvc-gcs: exit %d, stdout %q, stderr %q", args, res.code, res.stdout, res.stderr)
		}
	}
	handed("init", "--store", "gs://bucket/p", "elsewhere")
	handed("init", "--store=gs://bucket/p", "elsewhere")
	handed("clone", "/some/repo.git", "c")
	handed("commit", "-m", "v2")
	handed("push")
	handed("fsck", "--remote")
	handed("fsck", "--repair") // its repair sources are local; the store it repairs is gs://
	handed("store", "repos")
	other := newRunner(t)
	other.env = r.env
	rel, err := filepath.Rel(other.dir, r.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"-C", r.dir, "gc"}, {"--directory=" + rel, "gc"}} {
		res := other.run(self, args...)
		if !strings.HasPrefix(res.stdout, "gcs build got: ") {
			t.Errorf("%v in a gs:// repository not handed over: exit %d %q %q", args, res.code, res.stdout, res.stderr)
		}
	}
	for _, args := range [][]string{{"status"}, {"log"}, {"ls-files"}} {
		if res := r.run(self, args...); res.code != 0 || strings.Contains(res.stdout, "gcs build") {
			t.Errorf("%v was handed over or failed: exit %d %q %q", args, res.code, res.stdout, res.stderr)
		}
	}
	local := newRunner(t)
	local.write("a.bin", randomBytes(1000, 2))
	local.cv("init")
	local.cv("track", "*.bin")
	if res := local.run(self, "commit", "-q", "-m", "v1"); res.code != 0 || strings.Contains(res.stdout, "gcs build") {
		t.Errorf("commit in a repository with a local store: exit %d %q %q", res.code, res.stdout, res.stderr)
	}
	// A gs:// store set in .git/config alone (no argument, no committed
	// config names it) is the store fsck --repair repairs: handed over.
	local.git("config", "chunkvc.store", "gs://nowhere/other")
	if res := local.run(self, "fsck", "--repair"); res.stdout != "gcs build got: fsck --repair (1)\n" {
		t.Errorf("fsck --repair with chunkvc.store = gs:// in .git/config not handed over: exit %d %q %q", res.code, res.stdout, res.stderr)
	}
}

// Without chunkvc-gcs (not beside it, not on PATH), a command that needs a
// gs:// store fails with exit 6 and says what to build, before changing
// anything; status still runs.
func TestGCSWithoutCompanion(t *testing.T) {
	self := plainCopy(t, "")
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	r := newRunner(t)
	for i, e := range r.env {
		if strings.HasPrefix(e, "PATH=") {
			r.env[i] = "PATH=" + filepath.Dir(git)
		}
	}
	if p, err := exec.LookPath("chunkvc-gcs"); err == nil && filepath.Dir(p) == filepath.Dir(git) {
		t.Skipf("a chunkvc-gcs is installed beside git (%s)", p)
	}
	const msg = "chunkvc: gs:// stores need chunkvc-gcs (built by make; go build -tags gcs ./cmd/chunkvc)\n"
	res := r.run(self, "init", "--store", "gs://bucket/p", "new")
	if res.code != exitNeedsGCS || res.stderr != msg {
		t.Fatalf("init --store gs:// without chunkvc-gcs: exit %d (want %d), stderr %q (want %q)", res.code, exitNeedsGCS, res.stderr, msg)
	}
	if _, err := os.Stat(r.path("new")); !os.IsNotExist(err) {
		t.Fatalf("init made its directory before failing: %v", err)
	}
	gcsRepo(t, r)
	head := r.git("rev-parse", "HEAD")
	r.write("a.bin", randomBytes(1000, 3))
	res = r.run(self, "commit", "-m", "v2")
	if res.code != exitNeedsGCS || res.stderr != msg {
		t.Fatalf("commit in a gs:// repository without chunkvc-gcs: exit %d, stderr %q", res.code, res.stderr)
	}
	if got := r.git("rev-parse", "HEAD"); got != head {
		t.Fatal("the refused commit moved HEAD")
	}
	if res := r.run(self, "status"); res.code != 0 || !strings.Contains(res.stdout, "a.bin") {
		t.Fatalf("status in a gs:// repository: exit %d %q %q", res.code, res.stdout, res.stderr)
	}
	// A clone learns of the store from what Git fetched: it ends without
	// the files, with the same exit status and advice.
	res = r.run(self, "clone", r.dir, "c")
	if res.code != exitNeedsGCS || !strings.Contains(res.stderr, "gs:// stores need chunkvc-gcs") {
		t.Fatalf("clone of a gs:// repository without chunkvc-gcs: exit %d, stderr %q", res.code, res.stderr)
	}
	if _, err := os.Stat(r.path("c/a.bin")); !os.IsNotExist(err) {
		t.Fatalf("the clone has a.bin: %v", err)
	}
}
