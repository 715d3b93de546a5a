package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
	"github.com/chunkvc/chunkvc/hashing"
)

// commit --if-changed makes "nothing to commit" a success a script can
// read (--json "commit": null) and still commits when something changed;
// status --exit-code exits 1 exactly when something differs from HEAD.
func TestIfChangedAndStatusExitCode(t *testing.T) {
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "*.bin")
	r.write("a.bin", randomBytes(70000, 1))
	if res := r.run(binary, "status", "--exit-code"); res.code != exitFailure || !strings.Contains(res.stdout, "a.bin") {
		t.Fatalf("status --exit-code with a new file: exit %d, %q %q", res.code, res.stdout, res.stderr)
	}
	if res := r.run(binary, "status", "--exit-code", "--json"); res.code != exitFailure || !json.Valid([]byte(res.stdout)) {
		t.Fatalf("status --exit-code --json with a new file: exit %d, %q", res.code, res.stdout)
	}
	var first struct {
		Commit *string `json:"commit"`
	}
	r.jsonOf(&first, "commit", "--if-changed", "--json", "-m", "first")
	if first.Commit == nil || len(*first.Commit) != 40 {
		t.Fatalf("commit --if-changed of a new file: commit %v", first.Commit)
	}
	if res := r.run(binary, "status", "--exit-code"); res.code != exitOK || strings.Contains(res.stdout, "a.bin") {
		t.Fatalf("status --exit-code when clean: exit %d, %q", res.code, res.stderr)
	}
	res := r.run(binary, "commit", "--if-changed", "--json", "-m", "again")
	var again map[string]json.RawMessage
	if res.code != exitOK || json.Unmarshal([]byte(res.stdout), &again) != nil || string(again["commit"]) != "null" {
		t.Fatalf("commit --if-changed with nothing to commit: exit %d, %q %q", res.code, res.stdout, res.stderr)
	}
	if res := r.run(binary, "commit", "--if-changed", "-m", "again"); res.code != exitOK || !strings.Contains(res.stderr+res.stdout, "nothing to commit") {
		t.Fatalf("commit --if-changed, text: exit %d, %q %q", res.code, res.stdout, res.stderr)
	}
	if res := r.run(binary, "commit", "-m", "again"); res.code != exitFailure {
		t.Fatalf("commit without --if-changed, nothing to commit: exit %d", res.code)
	}
	if got := r.git("log", "--format=%s"); got != "first\n" {
		t.Fatalf("git log: %q", got)
	}
}

// ls-files lists a revision's files with the digest of their bytes and
// the commit that last changed each, at HEAD and at an older revision.
func TestLsFiles(t *testing.T) {
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "*.bin")
	a1, b := randomBytes(70000, 1), randomBytes(90000, 2)
	r.write("a.bin", a1)
	r.write("b.bin", b)
	r.cv("commit", "-m", "first")
	first := strings.TrimSpace(r.git("rev-parse", "HEAD"))
	a2 := randomBytes(70000, 3)
	r.write("a.bin", a2)
	r.write("README", []byte("not data\n"))
	r.git("add", "README")
	r.cv("commit", "-m", "second")
	second := strings.TrimSpace(r.git("rev-parse", "HEAD"))
	r.git("commit", "-q", "--allow-empty", "-m", "third, no data")

	type lsFiles struct {
		Commit string `json:"commit"`
		Files  []struct {
			Path, Digest, Format, Commit string
			Size                         int64
		} `json:"files"`
	}
	check := func(rev string, want map[string][2]string, sizes map[string]int) {
		t.Helper()
		var ls lsFiles
		args := []string{"ls-files", "--json"}
		if rev != "" {
			args = append(args, rev)
		}
		r.jsonOf(&ls, args...)
		if len(ls.Files) != len(want) {
			t.Fatalf("ls-files %s: %+v", rev, ls.Files)
		}
		for _, f := range ls.Files {
			w, ok := want[f.Path]
			if !ok || f.Digest != w[0] || f.Commit != w[1] || f.Size != int64(sizes[f.Path]) || f.Format != "generic" {
				t.Errorf("ls-files %s: %+v; want digest %s commit %s", rev, f, w[0], w[1])
			}
		}
	}
	sum := func(b []byte) string { return hashing.Sum(b).String() }
	check("", map[string][2]string{"a.bin": {sum(a2), second}, "b.bin": {sum(b), first}}, map[string]int{"a.bin": len(a2), "b.bin": len(b)})
	check(first, map[string][2]string{"a.bin": {sum(a1), first}, "b.bin": {sum(b), first}}, map[string]int{"a.bin": len(a1), "b.bin": len(b)})
	if res := r.run(binary, "ls-files", "no-such-rev"); res.code == exitOK {
		t.Error("ls-files of an unknown revision succeeded")
	}
}

// fsck --worktree re-hashes every tracked file and dataset against HEAD:
// clean after a commit; then a rewritten file, a rewritten chunk of a
// Zarr store and a deleted file are each named, with exit status 3.
func TestFsckWorktree(t *testing.T) {
	py := formattest.RequirePython(t, "zarr", "numpy")
	r := newRunner(t)
	r.git("init", "-q", "-b", "main")
	r.cv("init")
	r.cv("track", "*.bin")
	r.write("a.bin", randomBytes(70000, 1))
	r.write("b.bin", randomBytes(50000, 2))
	r.python(t, py, cubeSteps[0])
	r.cv("track", "cube.zarr")
	r.cv("commit", "-q", "-m", "v1")
	type wt struct {
		OK    bool `json:"ok"`
		Files []struct {
			Path, Status, Committed, Digest string
		} `json:"files"`
	}
	var clean wt
	r.jsonOf(&clean, "fsck", "--worktree", "--json")
	if !clean.OK || len(clean.Files) != 3 {
		t.Fatalf("fsck --worktree after a commit: %+v", clean)
	}
	for _, f := range clean.Files {
		if f.Status != "ok" || f.Digest != f.Committed {
			t.Errorf("clean work tree: %+v", f)
		}
	}
	r.write("a.bin", randomBytes(70000, 3))
	r.python(t, py, `a = zarr.open_group("cube.zarr")["temp"]
a[0, 0, 0] = 1234.5`)
	if err := os.Remove(r.path("b.bin")); err != nil {
		t.Fatal(err)
	}
	res := r.run(binary, "fsck", "--worktree", "--json")
	var got wt
	if res.code != exitIntegrity || json.Unmarshal([]byte(res.stdout), &got) != nil || got.OK {
		t.Fatalf("fsck --worktree after edits: exit %d (want %d)\n%s%s", res.code, exitIntegrity, res.stdout, res.stderr)
	}
	want := map[string]string{"a.bin": "differs", "b.bin": "missing", "cube.zarr": "differs"}
	for _, f := range got.Files {
		if want[f.Path] != f.Status {
			t.Errorf("%s: %s, want %s", f.Path, f.Status, want[f.Path])
		}
	}
	if res := r.run(binary, "fsck", "--worktree"); res.code != exitIntegrity || !strings.Contains(res.stdout, "differs  cube.zarr") {
		t.Errorf("fsck --worktree text: exit %d\n%s", res.code, res.stdout)
	}
}

// commit --json reports its stages in order, with the bytes read and
// stored: chunk read the file's bytes, store stored what the commit
// says it uploaded.
func TestCommitStages(t *testing.T) {
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "*.bin")
	r.write("a.bin", randomBytes(3<<20, 7))
	var res struct {
		BytesUploaded int64 `json:"bytes_uploaded"`
		Stages        []struct {
			Name     string  `json:"name"`
			Seconds  float64 `json:"seconds"`
			Items    int64   `json:"items"`
			BytesIn  int64   `json:"bytes_in"`
			BytesOut int64   `json:"bytes_out"`
			Retries  int64   `json:"retries"`
			Peak     int64   `json:"peak_bytes_in_flight"`
		} `json:"stages"`
	}
	r.jsonOf(&res, "commit", "--json", "-m", "first")
	var names []string
	for _, s := range res.Stages {
		names = append(names, s.Name)
		if s.Seconds < 0 {
			t.Errorf("stage %s: %v s", s.Name, s.Seconds)
		}
	}
	if strings.Join(names, " ") != "scan chunk store git" {
		t.Fatalf("stages %q", names)
	}
	if c := res.Stages[1]; c.Items != 1 || c.BytesIn != 3<<20 {
		t.Errorf("chunk stage %+v, want 1 file of %d bytes", c, 3<<20)
	}
	if s := res.Stages[2]; s.BytesOut != res.BytesUploaded || s.BytesOut == 0 {
		t.Errorf("store stage %+v, commit uploaded %d", s, res.BytesUploaded)
	}
	// The chunks went to the store while the file was chunked: at least
	// one chunk, at most the file, was in flight at once; the embedded
	// store never retries.
	if c := res.Stages[1]; c.Peak <= 0 || c.Peak > 3<<20 || c.Retries != 0 {
		t.Errorf("chunk stage %+v: peak bytes in flight or retries", c)
	}
}

// checkout --json reports its stages: plan, then write with the files
// written, the bytes fetched and the bytes written.
func TestCheckoutStages(t *testing.T) {
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "*.bin")
	r.write("a.bin", randomBytes(3<<20, 8))
	r.write("b.bin", randomBytes(1<<20, 9))
	r.cv("commit", "-q", "-m", "first")
	if err := os.Remove(r.path("a.bin")); err != nil {
		t.Fatal(err)
	}
	var res struct {
		Files []struct {
			Path         string `json:"path"`
			Status       string `json:"status"`
			BytesFetched int64  `json:"bytes_fetched"`
		} `json:"files"`
		Stages []struct {
			Name     string `json:"name"`
			Items    int64  `json:"items"`
			BytesIn  int64  `json:"bytes_in"`
			BytesOut int64  `json:"bytes_out"`
		} `json:"stages"`
	}
	r.jsonOf(&res, "checkout", "--json")
	if len(res.Stages) != 2 || res.Stages[0].Name != "plan" || res.Stages[1].Name != "write" {
		t.Fatalf("stages %+v", res.Stages)
	}
	var fetched int64
	for _, f := range res.Files {
		fetched += f.BytesFetched
	}
	if w := res.Stages[1]; w.Items != 1 || w.BytesOut != 3<<20 || w.BytesIn != fetched || res.Stages[0].Items != 2 {
		t.Errorf("checkout of one missing 3 MiB file of two: stages %+v, fetched %d", res.Stages, fetched)
	}
}
