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
	"strings"
	"testing"
)

// binary is the chunkvc built once for all end-to-end tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "chunkvc-e2e-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "chunkvc")
	// The everyday binary, and beside it chunkvc-gcs, which it hands
	// gs:// commands (and clones) to, as `make build` installs them.
	// Both builds run at once: the second one is mostly the linker.
	gcs := exec.Command("go", "build", "-tags", "gcs", "-o", filepath.Join(dir, "chunkvc-gcs"), ".")
	var gcsOut bytes.Buffer
	gcs.Stdout, gcs.Stderr = &gcsOut, &gcsOut
	if err := gcs.Start(); err != nil {
		panic(err)
	}
	out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
	if gcsErr := gcs.Wait(); err == nil && gcsErr != nil {
		err, out = gcsErr, gcsOut.Bytes()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "build chunkvc: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// env is a hermetic environment for chunkvc and git.
func env(t testing.TB, extra ...string) []string {
	home := t.TempDir()
	e := []string{
		"HOME=" + home, "PATH=" + os.Getenv("PATH"), "LANG=C", "TZ=UTC",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com",
		"GIT_CONFIG_NOSYSTEM=1",
	}
	return append(e, extra...)
}

// result of one command.
type result struct {
	stdout, stderr string
	code           int
}

type runner struct {
	t   testing.TB
	dir string
	env []string
}

func newRunner(t testing.TB) *runner {
	return &runner{t: t, dir: t.TempDir(), env: env(t)}
}

// run executes a program in the runner's directory.
func (r *runner) run(name string, args ...string) result {
	r.t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = r.dir
	cmd.Env = r.env
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	res := result{stdout: so.String(), stderr: se.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		res.code = ee.ExitCode()
	} else if err != nil {
		r.t.Fatalf("%s %v: %v", name, args, err)
	}
	return res
}

// cv runs chunkvc and fails the test unless it exits 0.
func (r *runner) cv(args ...string) string {
	r.t.Helper()
	res := r.run(binary, args...)
	if res.code != 0 {
		r.t.Fatalf("chunkvc %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), res.code, res.stdout, res.stderr)
	}
	return res.stdout
}

// git runs the git CLI and fails the test unless it exits 0.
func (r *runner) git(args ...string) string {
	r.t.Helper()
	res := r.run("git", args...)
	if res.code != 0 {
		r.t.Fatalf("git %s: exit %d\n%s%s", strings.Join(args, " "), res.code, res.stdout, res.stderr)
	}
	return res.stdout
}

func (r *runner) jsonOf(v any, args ...string) {
	r.t.Helper()
	out := r.cv(append([]string{args[0], "--json"}, args[1:]...)...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		r.t.Fatalf("chunkvc %v --json: %v\n%s", args, err, out)
	}
}

func (r *runner) path(p string) string { return filepath.Join(r.dir, filepath.FromSlash(p)) }

func (r *runner) write(p string, data []byte) {
	r.t.Helper()
	if err := os.MkdirAll(filepath.Dir(r.path(p)), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(r.path(p), data, 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func (r *runner) read(p string) []byte {
	r.t.Helper()
	b, err := os.ReadFile(r.path(p))
	if err != nil {
		r.t.Fatal(err)
	}
	return b
}

func randomBytes(n int, seed int64) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

// commitResult mirrors commit --json.
type commitResult struct {
	Commit         string `json:"commit"`
	Branch         string `json:"branch"`
	ChunksUploaded int64  `json:"chunks_uploaded"`
	BytesUploaded  int64  `json:"bytes_uploaded"`
	Files          []struct {
		Path      string `json:"path"`
		Status    string `json:"status"`
		Format    string `json:"format"`
		Fallback  string `json:"fallback"`
		Size      int64  `json:"size"`
		Chunks    int    `json:"chunks"`
		NewChunks int    `json:"new_chunks"`
		NewBytes  int64  `json:"new_bytes"`
	} `json:"files"`
}
