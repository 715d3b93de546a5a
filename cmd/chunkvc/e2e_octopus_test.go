package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/formats/formattest"
)

// octopusJSON is chunkvc merge --json of several revisions.
type octopusJSON struct {
	Commit   string   `json:"commit"`
	Merged   []string `json:"merged"`
	Files    []string `json:"files"`
	Parents  []string `json:"parents"`
	Stopped  string   `json:"stopped_at"`
	Resolved []struct {
		Path, Outcome string
	} `json:"resolved"`
}

// workerBranches commits each of edits (cogTool's edits of dem.tif, with
// opts) on its own branch w0, w1… made from the current branch, and
// checks the current branch out again. extra, when set, runs on a branch
// before its commit.
func workerBranches(t *testing.T, r *runner, opts []string, edits []string, extra func(i int)) []string {
	t.Helper()
	main := strings.TrimSpace(r.git("symbolic-ref", "--short", "HEAD"))
	var names []string
	for i, e := range edits {
		name := fmt.Sprintf("w%d", i)
		r.git("checkout", "-q", "-b", name, main)
		r.cv("checkout", "--force")
		cog(t, append([]string{"edit", r.path("dem.tif"), e}, opts...)...)
		if extra != nil {
			extra(i)
		}
		r.cv("commit", "-q", "-m", "worker "+name)
		names = append(names, name)
	}
	r.git("checkout", "-q", main)
	r.cv("checkout", "--force")
	return names
}

// octopusRepo is a repository with cogTool's COG (made with opts)
// committed on main and each of edits committed on its own branch.
func octopusRepo(t *testing.T, opts []string, edits []string, extra func(r *runner, i int)) (*runner, []string) {
	formattest.RequireTool(t, "git")
	r := newRunner(t)
	r.git("init", "-q", "-b", "main")
	r.cv("init")
	r.cv("track", "*.tif", "*.bin")
	cog(t, append([]string{"make", r.path("dem.tif")}, opts...)...)
	r.cv("commit", "-q", "-m", "base")
	var each func(int)
	if extra != nil {
		each = func(i int) { extra(r, i) }
	}
	return r, workerBranches(t, r, opts, edits, each)
}

// checkOctopus requires HEAD to be one merge commit of main's old commit
// base and every branch in names, main's history to hold commits
// commits, GDAL to read every edit in the merged COG (full resolution
// and overview), and everything to be clean.
func checkOctopus(t *testing.T, r *runner, res octopusJSON, base string, names []string, commits int, opts []string, edits []string) {
	t.Helper()
	want := []string{base}
	for _, n := range names {
		want = append(want, strings.TrimSpace(r.git("rev-parse", n)))
	}
	got := strings.Fields(r.git("rev-list", "--parents", "-1", "HEAD"))
	if len(got) != len(want)+1 || strings.Join(got[1:], " ") != strings.Join(want, " ") || got[0] != res.Commit {
		t.Fatalf("HEAD %v is no octopus merge of %v (json %+v)", got, want, res)
	}
	if strings.Join(res.Parents, " ") != strings.Join(want, " ") {
		t.Fatalf("merge --json: %+v", res)
	}
	if b := strings.TrimSpace(r.git("symbolic-ref", "--short", "HEAD")); b != "main" {
		t.Fatalf("HEAD is on %q after the merge", b)
	}
	if out := r.git("log", "--format=%s", "main"); strings.Count(out, "\n") != commits ||
		!strings.HasPrefix(out, "Merge branches 'w0', 'w1', 'w2' and 'w3'\n") {
		t.Fatalf("history of main:\n%s", out)
	}
	if got := cog(t, append(append([]string{"check", r.path("dem.tif")}, edits...), opts...)...); got != "full-res pixels wrong: 0, overview pixels wrong: 0" {
		t.Fatalf("merged COG: %s", got)
	}
	formattest.Run1(t, "gdalinfo", "-checksum", r.path("dem.tif"))
	if r.run("git", "rev-parse", "-q", "--verify", "MERGE_HEAD").code == 0 {
		t.Fatal("MERGE_HEAD left after the merge")
	}
	mergedClean(t, r)
}

// Four branches that each edited different tiles of one COG merge in one
// commit with five parents: GDAL reads all four edits in the merged file
// (git's octopus strategy merges manifests as text and stops). A
// modified work file is refused first; revisions already merged add no
// parent.
func TestMergeOctopusCOG(t *testing.T) {
	r, names := octopusRepo(t, nil, workerEdits, nil)
	base := strings.TrimSpace(r.git("rev-parse", "HEAD"))
	// A changed data file would not survive going back: refused first.
	dem := r.read("dem.tif")
	cog(t, "edit", r.path("dem.tif"), "500,500,10,10,9")
	if res := r.run(binary, append([]string{"merge"}, names...)...); res.code == 0 || !strings.Contains(res.stderr, "needs a clean work tree, and dem.tif is modified") {
		t.Fatalf("octopus merge over a modified file: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if strings.TrimSpace(r.git("rev-parse", "HEAD")) != base || strings.TrimSpace(r.git("symbolic-ref", "--short", "HEAD")) != "main" {
		t.Fatal("a refused octopus merge moved HEAD")
	}
	r.cv("checkout", "--force")
	if !bytes.Equal(r.read("dem.tif"), dem) {
		t.Fatal("checkout --force did not restore dem.tif")
	}
	// main itself and a revision named twice add no parent.
	asked := append(append([]string{}, names...), "main", "w1")
	var res octopusJSON
	r.jsonOf(&res, append([]string{"merge"}, asked...)...)
	if len(res.Files) != 1 || res.Files[0] != "dem.tif" || strings.Join(res.Merged, " ") != strings.Join(asked, " ") {
		t.Fatalf("merge --json: %+v", res)
	}
	checkOctopus(t, r, res, base, names, len(names)+2, nil, workerEdits)
}

// The same with a COG of 1,280 tiles, whose manifest is split (git's
// driver cannot merge it alone: chunkvc settles each step itself), main
// having edited a tile of its own.
func TestMergeOctopusSplitCOG(t *testing.T) {
	r, names := octopusRepo(t, splitCOG, workerEdits, nil)
	if shards := r.git("ls-tree", "-r", "--name-only", "HEAD", "--", ".chunkvc/shards/"); strings.Count(shards, "\n") < 8 {
		t.Fatalf("the test COG has no split manifest:\n%s", shards)
	}
	// main edits a tile of its own too, so even the first step merges.
	ours := "2000,2000,50,50,33"
	cog(t, append([]string{"edit", r.path("dem.tif"), ours}, splitCOG...)...)
	r.cv("commit", "-q", "-m", "ours")
	base := strings.TrimSpace(r.git("rev-parse", "HEAD"))
	var res octopusJSON
	r.jsonOf(&res, append([]string{"merge"}, names...)...)
	if len(res.Resolved) != len(names) {
		t.Fatalf("merge --json: not every step's split manifest settled by chunkvc: %+v", res)
	}
	checkOctopus(t, r, res, base, names, len(names)+3, splitCOG, append([]string{ours}, workerEdits...))
}

// A Zarr dataset changed on three branches (two chunks, an append along
// time) merges in one commit into the store zarr-python writes when one
// writer does all three.
func TestMergeOctopusZarr(t *testing.T) {
	py := formattest.RequirePython(t, "zarr", "numpy")
	formattest.RequireTool(t, "git")
	r, cube := zarrRepo(t, py)
	steps := []string{"corner", "far", "append"}
	for i, s := range steps {
		r.git("checkout", "-q", "-b", fmt.Sprintf("w%d", i), "main")
		r.cv("checkout", "--force")
		zarrStep(t, py, cube, s)
		r.cv("commit", "-q", "-m", s)
	}
	r.git("checkout", "-q", "main")
	r.cv("checkout", "--force")
	base := strings.TrimSpace(r.git("rev-parse", "HEAD"))
	var res octopusJSON
	r.jsonOf(&res, "merge", "w0", "w1", "w2")
	want := filepath.Join(t.TempDir(), "want.zarr")
	zarrStep(t, py, want, "base")
	zarrStep(t, py, want, "corner+far+append")
	sameTree(t, "merged store", listing(t, want), listing(t, cube))
	if got := strings.Fields(r.git("rev-list", "--parents", "-1", "HEAD")); len(got) != 5 || got[1] != base || len(res.Parents) != 4 {
		t.Fatalf("HEAD is no octopus merge of main and w0..w2: %v (json %+v)", got, res)
	}
	if st := r.cv("status"); strings.Contains(st, "cube.zarr") {
		t.Fatalf("status after the merge:\n%s", st)
	}
	r.cv("fsck")
}

// An octopus merge whose third revision edits a tile the first one
// edited too stops there and puts everything back: the branch, HEAD
// attached to it, the index, the work file (and no file a merged branch
// added), no MERGE_HEAD; the error names the revision, the file and the
// tile, and says to merge that one alone.
func TestMergeOctopusConflictRestores(t *testing.T) {
	edits := []string{editTopLeft, "900,10,100,100,50", editTopLeftToo, editBottomRight}
	r, names := octopusRepo(t, nil, edits, func(r *runner, i int) {
		if i == 1 {
			r.write("new.bin", randomBytes(100000, 9)) // a file only w1 adds
		}
	})
	// chunkvc checkout leaves a file the branch left behind added.
	if err := os.Remove(r.path("new.bin")); err != nil {
		t.Fatal(err)
	}
	head := strings.TrimSpace(r.git("rev-parse", "HEAD"))
	dem, manifest := r.read("dem.tif"), r.read(".chunkvc/manifests/dem.tif")
	res := r.run(binary, append([]string{"merge", "--json"}, names...)...)
	if res.code != exitFailure {
		t.Fatalf("octopus merge with a conflict: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	for _, want := range []string{"merging w2 conflicts in dem.tif (z0/r0/c0", "chunkvc merge w2"} {
		if !strings.Contains(res.stderr, want) {
			t.Fatalf("the error does not say %q:\n%s", want, res.stderr)
		}
	}
	if !strings.Contains(res.stdout, `"stopped_at": "w2"`) || strings.Contains(res.stdout, `"commit"`) {
		t.Fatalf("merge --json:\n%s", res.stdout)
	}
	if got := strings.TrimSpace(r.git("rev-parse", "main")); got != head {
		t.Fatalf("main moved to %s", got)
	}
	if b := r.run("git", "symbolic-ref", "--short", "HEAD"); b.code != 0 || strings.TrimSpace(b.stdout) != "main" {
		t.Fatalf("HEAD is not on main: %q", b.stdout)
	}
	if out := r.git("status", "--porcelain"); out != "" {
		t.Fatalf("git status after the stopped merge:\n%s", out)
	}
	if _, err := os.Stat(r.path("new.bin")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("new.bin, which only w1 adds, is left after the stopped merge: %v", err)
	}
	if r.run("git", "rev-parse", "-q", "--verify", "MERGE_HEAD").code == 0 {
		t.Fatal("MERGE_HEAD left after the stopped merge")
	}
	if !bytes.Equal(r.read("dem.tif"), dem) || !bytes.Equal(r.read(".chunkvc/manifests/dem.tif"), manifest) {
		t.Fatal("dem.tif or its manifest is not as it was before the merge")
	}
	if st := r.cv("status"); strings.Contains(st, "dem.tif") || strings.Contains(st, "new.bin") {
		t.Fatalf("status after the stopped merge:\n%s", st)
	}
	r.cv("fsck")
}

// An octopus merge killed while HEAD is detached at one of its steps
// leaves main where it was (history is not cut); the next merge says how
// to go back, and after that the merge goes through.
func TestMergeOctopusKilled(t *testing.T) {
	r, names := octopusRepo(t, nil, workerEdits, nil)
	base := strings.TrimSpace(r.git("rev-parse", "HEAD"))
	cmd := exec.Command(binary, append([]string{"merge"}, names...)...)
	cmd.Dir, cmd.Env = r.dir, r.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	killed := false
	for !killed {
		select {
		case <-done:
			t.Fatal("the merge finished before HEAD left main")
		case <-time.After(time.Millisecond):
		}
		if h, err := os.ReadFile(r.path(".git/HEAD")); err == nil && !bytes.HasPrefix(h, []byte("ref:")) && strings.TrimSpace(string(h)) != base {
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-done
			killed = cmd.ProcessState.ExitCode() == -1
		}
	}
	// The git and driver it ran finish on their own: wait for them.
	for syscall.Kill(-cmd.Process.Pid, 0) == nil {
		time.Sleep(10 * time.Millisecond)
	}
	if got := strings.TrimSpace(r.git("rev-parse", "main")); got != base {
		if ps := strings.Fields(r.git("rev-list", "--parents", "-1", "main")); len(ps) != 6 {
			t.Fatalf("main moved to %v, neither where it was nor the whole merge", ps)
		}
		t.Log("killed after main moved to the merge commit")
	}
	res := r.run(binary, append([]string{"merge"}, names...)...)
	if res.code == 0 || !strings.Contains(res.stderr, "was cut short") || !strings.Contains(res.stderr, "git checkout -f main && chunkvc checkout --force") {
		t.Fatalf("merge after a killed one: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	r.git("checkout", "-q", "-f", "main")
	r.cv("checkout", "--force")
	if st := r.cv("status"); strings.Contains(st, "dem.tif") {
		t.Fatalf("status after going back:\n%s", st)
	}
	if strings.TrimSpace(r.git("rev-parse", "main")) != base {
		return // the merge commit was made
	}
	var out octopusJSON
	r.jsonOf(&out, append([]string{"merge"}, names...)...)
	checkOctopus(t, r, out, base, names, len(names)+2, nil, workerEdits)
}

// A file a revision adds that the work tree already holds, untracked here
// (HEAD's patterns do not cover it, so status is clean), refuses the
// octopus merge before anything moves: going back after a conflict
// removes what the merged steps added, and the user's bytes were never
// stored.
func TestMergeOctopusKeepsUntrackedFile(t *testing.T) {
	edits := []string{editTopLeft, "900,10,100,100,50", editTopLeftToo, editBottomRight}
	r, names := octopusRepo(t, nil, edits, func(r *runner, i int) {
		if i == 1 {
			r.cv("track", "*.nc")
			r.write("x.nc", randomBytes(50000, 3)) // w1 tracks and adds x.nc
		}
	})
	if err := os.Remove(r.path("x.nc")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	mine := randomBytes(60000, 4)
	r.write("x.nc", mine) // the user's own, which main does not track
	head := strings.TrimSpace(r.git("rev-parse", "HEAD"))
	res := r.run(binary, append([]string{"merge"}, names...)...)
	if res.code == 0 {
		t.Fatalf("octopus merge over an untracked x.nc went through:\n%s%s", res.stdout, res.stderr)
	}
	if !bytes.Equal(r.read("x.nc"), mine) {
		t.Fatal("the user's x.nc was removed or changed by the octopus merge")
	}
	if !strings.Contains(res.stderr, "x.nc") {
		t.Fatalf("the error does not name x.nc:\n%s", res.stderr)
	}
	if got := strings.TrimSpace(r.git("rev-parse", "main")); got != head {
		t.Fatalf("main moved to %s", got)
	}
}
