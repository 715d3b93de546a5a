package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/repo"
)

func TestHelpForEveryCommand(t *testing.T) {
	r := newRunner(t)
	for _, c := range []string{"init", "track", "status", "commit", "checkout", "log", "ls-chunks", "ls-files", "cat", "fsck"} {
		res := r.run(binary, c, "--help")
		if res.code != 0 || !strings.Contains(res.stdout, "Usage:") {
			t.Errorf("%s --help: exit %d\n%s", c, res.code, res.stdout)
		}
	}
	if res := r.run(binary, "--help"); !strings.Contains(res.stdout, "Exit status") {
		t.Error("root help does not document exit codes")
	}
	if res := r.run(binary, "commit", "--no-such-flag"); res.code != exitUsage {
		t.Errorf("unknown flag: exit %d, want %d", res.code, exitUsage)
	}
	if res := r.run(binary, "status"); res.code != exitFailure || !strings.Contains(res.stderr, "init") {
		t.Errorf("status outside a repository: exit %d, stderr %q", res.code, res.stderr)
	}
}

func TestCommitIncludesStagedAndReportsNothingToCommit(t *testing.T) {
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "*.bin")
	r.write("a.bin", randomBytes(70000, 1))
	r.write("README.txt", []byte("hello\n"))
	r.git("add", "README.txt")
	r.cv("commit", "-m", "first")
	files := r.git("ls-tree", "-r", "--name-only", "HEAD")
	for _, want := range []string{"README.txt", ".chunkvc/config", ".chunkvc/manifests/a.bin", ".gitignore"} {
		if !strings.Contains(files, want+"\n") {
			t.Fatalf("commit lacks %s:\n%s", want, files)
		}
	}
	for _, f := range strings.Split(files, "\n") {
		if f == "a.bin" {
			t.Fatal("the data file itself entered Git")
		}
	}
	res := r.run(binary, "commit", "-m", "again")
	if res.code != exitFailure || !strings.Contains(res.stderr, "nothing to commit") {
		t.Fatalf("second commit: exit %d, %q", res.code, res.stderr)
	}
	if got := r.git("log", "--format=%s"); got != "first\n" {
		t.Fatalf("git log: %q", got)
	}
}

func TestStatusAndDeletion(t *testing.T) {
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "*.bin")
	r.write("a.bin", randomBytes(1000, 1))
	r.write("b.bin", randomBytes(1000, 2))
	var st struct {
		Files []struct{ Path, Status string } `json:"files"`
		Clean bool                            `json:"clean"`
	}
	r.jsonOf(&st, "status")
	if len(st.Files) != 2 || st.Files[0].Status != "added" || st.Clean {
		t.Fatalf("status before commit: %+v", st)
	}
	r.cv("commit", "-m", "v1")
	r.jsonOf(&st, "status")
	if !st.Clean || len(st.Files) != 0 {
		t.Fatalf("status after commit: %+v", st)
	}
	// Same size, new bytes: must be seen even though the size is equal.
	r.write("a.bin", randomBytes(1000, 3))
	os.Remove(r.path("b.bin"))
	st.Files = nil
	r.jsonOf(&st, "status")
	if len(st.Files) != 2 || st.Files[0].Path != "a.bin" || st.Files[0].Status != "modified" || st.Files[1].Status != "deleted" {
		t.Fatalf("status after edit and delete: %+v", st)
	}
	var res commitResult
	r.jsonOf(&res, "commit", "-m", "v2")
	if r.git("ls-tree", "-r", "--name-only", "HEAD", ".chunkvc/manifests/") != ".chunkvc/manifests/a.bin\n" {
		t.Fatal("deleted file's manifest still in HEAD")
	}
	if _, err := os.Stat(r.path(".chunkvc/manifests/b.bin")); !os.IsNotExist(err) {
		t.Fatal("deleted file's manifest still in the work tree")
	}
}

func TestCheckoutRefusesToLoseWork(t *testing.T) {
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "*.bin")
	v1 := randomBytes(300000, 1)
	r.write("a.bin", v1)
	r.cv("commit", "-m", "v1")
	v2 := randomBytes(300000, 2)
	r.write("a.bin", v2)
	r.cv("commit", "-m", "v2")
	work := randomBytes(300000, 3)
	r.write("a.bin", work)
	res := r.run(binary, "checkout", "HEAD~1", "--", "a.bin")
	if res.code != exitRefused || !bytes.Equal(r.read("a.bin"), work) {
		t.Fatalf("checkout over uncommitted work: exit %d (want %d), file kept: %v", res.code, exitRefused, bytes.Equal(r.read("a.bin"), work))
	}
	r.cv("checkout", "--force", "HEAD~1", "--", "a.bin")
	if !bytes.Equal(r.read("a.bin"), v1) {
		t.Fatal("forced checkout of v1 differs")
	}
	// v1's bytes are stored, so going back to HEAD needs no --force.
	r.cv("checkout", "--", "a.bin")
	if !bytes.Equal(r.read("a.bin"), v2) {
		t.Fatal("checkout of HEAD differs from v2")
	}
	leftovers, _ := filepath.Glob(r.path(".a.bin.chunkvc-tmp-*"))
	if len(leftovers) != 0 {
		t.Fatalf("temp files left: %v", leftovers)
	}
}

func TestCheckoutRefusesSymlinkEscape(t *testing.T) {
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "d/*.bin")
	r.write("d/a.bin", randomBytes(1000, 1))
	r.cv("commit", "-m", "v1")
	outside := t.TempDir()
	os.RemoveAll(r.path("d"))
	if err := os.Symlink(outside, r.path("d")); err != nil {
		t.Fatal(err)
	}
	res := r.run(binary, "checkout")
	if res.code == 0 || !strings.Contains(res.stderr, "symbolic link") {
		t.Fatalf("checkout through a symlink: exit %d, %q", res.code, res.stderr)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("checkout wrote outside the work tree: %v", ents)
	}
}

func TestFsckFindsCorruptAndMissingChunks(t *testing.T) {
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "*.bin")
	r.write("a.bin", randomBytes(600000, 1))
	r.cv("commit", "-m", "v1")
	var ls struct {
		Chunks []struct{ Key, Hash string } `json:"chunks"`
	}
	r.jsonOf(&ls, "ls-chunks", "a.bin")
	if len(ls.Chunks) < 3 {
		t.Fatalf("want several chunks, got %d", len(ls.Chunks))
	}
	// Flip one byte of one chunk.
	victim := ls.Chunks[1]
	damageObject(t, r.path(".git/chunkvc/store"), victim.Hash)
	if res := r.run(binary, "fsck"); res.code != 0 {
		t.Fatalf("size-only fsck should not read bytes: exit %d %s", res.code, res.stdout)
	}
	res := r.run(binary, "fsck", "--verify=full", "--json")
	var out struct {
		OK       bool `json:"ok"`
		Problems []struct{ Path, Key, Hash, Error string }
	}
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
		t.Fatalf("fsck --json: %v\n%s", err, res.stdout)
	}
	if res.code != exitIntegrity || out.OK || len(out.Problems) != 1 || out.Problems[0].Key != victim.Key || out.Problems[0].Hash != victim.Hash || out.Problems[0].Path != "a.bin" {
		t.Fatalf("fsck: exit %d, %+v", res.code, out)
	}
	// Checkout must not write the corrupt file under its real name.
	orig := r.read("a.bin")
	os.Remove(r.path("a.bin"))
	co := r.run(binary, "checkout")
	if co.code != exitIntegrity || !strings.Contains(co.stderr, victim.Hash) {
		t.Fatalf("checkout of corrupt chunk: exit %d, %q", co.code, co.stderr)
	}
	if _, err := os.Stat(r.path("a.bin")); !os.IsNotExist(err) {
		t.Fatal("a corrupt file was written under its real name")
	}
	_ = orig
	// A missing chunk is named too.
	if !loseObject(t, r.path(".git/chunkvc/store"), ls.Chunks[0].Hash) {
		t.Fatal("chunk to lose is not in the store")
	}
	res = r.run(binary, "fsck")
	if res.code != exitIntegrity || !strings.Contains(res.stdout, ls.Chunks[0].Key) || !strings.Contains(res.stdout, "missing") {
		t.Fatalf("fsck with a missing chunk: exit %d\n%s", res.code, res.stdout)
	}
}

func TestLogAndLsChunksJSON(t *testing.T) {
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "*.bin")
	data := randomBytes(2<<20, 1)
	r.write("a.bin", data)
	r.cv("commit", "-m", "v1")
	copy(data[1<<20:], []byte("edit"))
	r.write("a.bin", data)
	r.cv("commit", "-m", "v2")
	var lg struct {
		Commits []struct {
			Commit, Message string
			Files           []struct {
				Path, Status string
				Changed      int   `json:"chunks_changed"`
				Added        int   `json:"chunks_added"`
				Removed      int   `json:"chunks_removed"`
				Unchanged    int   `json:"chunks_unchanged"`
				NewBytes     int64 `json:"new_bytes"`
			}
		}
	}
	r.jsonOf(&lg, "log")
	if len(lg.Commits) != 2 || lg.Commits[0].Message != "v2" || lg.Commits[1].Files[0].Status != "added" {
		t.Fatalf("log: %+v", lg)
	}
	f := lg.Commits[0].Files[0]
	if f.Status != "modified" || f.Unchanged == 0 || f.Added+f.Changed == 0 || f.NewBytes > 1<<20 {
		t.Fatalf("log entry for a small edit: %+v", f)
	}
	var ls map[string]any
	r.jsonOf(&ls, "ls-chunks", "HEAD~1:a.bin")
	for _, k := range []string{"path", "format", "size", "chunks"} {
		if _, ok := ls[k]; !ok {
			t.Fatalf("ls-chunks --json lacks %q: %v", k, ls)
		}
	}
	if ls["format"] != "generic" || int(ls["size"].(float64)) != len(data) {
		t.Fatalf("ls-chunks: %v %v", ls["format"], ls["size"])
	}
	text := r.cv("log")
	if !strings.Contains(text, "modified  a.bin") {
		t.Fatalf("text log:\n%s", text)
	}
}

// After install, git diff of a manifest goes through chunkvc's textconv.
func TestInstallConfiguresGitDiff(t *testing.T) {
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "*.bin")
	data := randomBytes(1<<20, 1)
	r.write("a.bin", data)
	r.cv("commit", "-m", "v1")
	r.cv("install")
	r.cv("install") // idempotent
	copy(data[500000:], []byte("edit"))
	r.write("a.bin", data)
	r.cv("commit", "-m", "v2")
	attrs := string(r.read(".gitattributes"))
	if strings.Count(attrs, "diff=chunkvc") != 1 || strings.Count(attrs, repo.MergeAttribute+"\n") != 1 {
		t.Fatalf(".gitattributes: %q", attrs)
	}
	if d := r.git("config", repo.MergeDriverKey); !strings.Contains(d, "merge-driver %O %A %B %P") {
		t.Fatalf("%s = %q", repo.MergeDriverKey, d)
	}
	if !strings.Contains(r.git("ls-files"), ".gitattributes") {
		t.Fatal(".gitattributes not committed with the next commit")
	}
	plain := r.git("diff", "--no-textconv", "HEAD~1", "HEAD", "--", ".chunkvc/manifests/a.bin")
	conv := r.git("diff", "HEAD~1", "HEAD", "--", ".chunkvc/manifests/a.bin")
	if conv == plain || !strings.Contains(conv, "cdc@") {
		t.Fatalf("git diff did not use the textconv driver:\n%s", conv)
	}
	if hook := string(r.read(".git/hooks/pre-push")); !strings.Contains(hook, "pre-push") {
		t.Fatal("pre-push hook missing")
	}
	if hook := string(r.read(".git/hooks/post-merge")); !strings.Contains(hook, "-q checkout") {
		t.Fatal("post-merge hook missing")
	}
}

// The pure-Go chunkvc hands GDAL commands to chunkvc-gdal beside it.
func TestDelegatesGDALCommands(t *testing.T) {
	dir := t.TempDir()
	self := filepath.Join(dir, "chunkvc")
	b, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(self, b, 0o755); err != nil {
		t.Fatal(err)
	}
	fake := "#!/bin/sh\necho \"gdal build got: $*\"\n"
	if err := os.WriteFile(filepath.Join(dir, "chunkvc-gdal"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	r := newRunner(t)
	for _, args := range [][]string{{"normalize", "a.tif"}, {"diff", "--png", "x.png"}, {"diff", "--format", "geojson"}, {"diff", "--features", "--format", "geojson"},
		{"diff", "--conflicts", "--format", "png", "-o", "x.png"}, {"diff", "--format", "html", "-o", "r.html"}, {"diff", "--format=html"}} {
		res := r.run(self, args...)
		if res.code != 0 || res.stdout != "gdal build got: "+strings.Join(args, " ")+"\n" {
			t.Fatalf("%v not delegated: exit %d %q %q", args, res.code, res.stdout, res.stderr)
		}
	}
	if res := r.run(self, "status"); strings.Contains(res.stdout, "gdal build") {
		t.Fatal("status was delegated")
	}
}
