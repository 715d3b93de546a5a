package main

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
)

// splitCOG makes cogTool's COG one of 4096² in 128² tiles: 1,280
// chunks, a split manifest, which git hands its merge driver in pieces.
var splitCOG = []string{"opt:size=4096", "opt:block=128"}

// splitMergeRepo is mergeRepo with the split COG, and ours edited
// and committed on the main branch; theirEdit may be several edits
// separated by spaces.
func splitMergeRepo(t *testing.T, ourEdit, theirEdit string) *runner {
	r := newRunner(t)
	r.cv("init")
	r.cv("install")
	r.cv("track", "*.tif")
	cog(t, append([]string{"make", r.path("dem.tif")}, splitCOG...)...)
	r.cv("commit", "-q", "-m", "base")
	if shards := r.git("ls-tree", "-r", "--name-only", "HEAD", "--", ".chunkvc/shards/"); strings.Count(shards, "\n") < 8 {
		t.Fatalf("the test COG has no split manifest:\n%s", shards)
	}
	editOnBranches(t, r, append(strings.Fields(theirEdit), splitCOG...), append([]string{ourEdit}, splitCOG...))
	return r
}

// editOnBranches commits cogTool's edit of dem.tif with theirArgs on a
// new branch "theirs", and with ourArgs on the current branch, which is
// checked out again first.
func editOnBranches(t *testing.T, r *runner, theirArgs, ourArgs []string) {
	t.Helper()
	main := strings.TrimSpace(r.git("symbolic-ref", "--short", "HEAD"))
	r.git("checkout", "-q", "-b", "theirs")
	cog(t, append([]string{"edit", r.path("dem.tif")}, theirArgs...)...)
	r.cv("commit", "-q", "-m", "theirs")
	r.git("checkout", "-q", main)
	r.cv("checkout", "--force")
	cog(t, append([]string{"edit", r.path("dem.tif")}, ourArgs...)...)
	r.cv("commit", "-q", "-m", "ours")
}

// checkMerged requires the merged COG to hold both edits (GDAL reads it)
// and every version to be whole, and the merge commit to have both
// parents and describe the work file.
func checkMerged(t *testing.T, r *runner, edits ...string) {
	t.Helper()
	if got := cog(t, append(append([]string{"check", r.path("dem.tif")}, edits...), splitCOG...)...); got != "full-res pixels wrong: 0, overview pixels wrong: 0" {
		t.Fatalf("merged COG: %s", got)
	}
	if parents := strings.Fields(r.git("log", "-1", "--format=%P")); len(parents) != 2 {
		t.Fatalf("HEAD is no merge commit: parents %v", parents)
	}
	mergedClean(t, r)
}

// mergedClean requires HEAD's dem.tif to be the work file, nothing
// changed for chunkvc or git, and fsck to pass.
func mergedClean(t *testing.T, r *runner) {
	t.Helper()
	if !bytes.Equal([]byte(r.cv("cat", "HEAD:dem.tif")), r.read("dem.tif")) {
		t.Fatal("chunkvc cat HEAD:dem.tif differs from the merged work file")
	}
	if st := r.cv("status"); strings.Contains(st, "dem.tif") {
		t.Fatalf("status after the merge:\n%s", st)
	}
	if out := r.git("status", "--porcelain"); out != "" {
		t.Fatalf("git status after the merge:\n%s", out)
	}
	r.cv("fsck")
}

// chunkvc merge merges a COG with a split manifest that both sides edited
// in different tiles, which git alone stops on: one merge commit, both
// edits in the pixels (full resolution and overview), the root and
// shards consistent (fsck).
func TestMergeCommandSplitCOG(t *testing.T) {
	r := splitMergeRepo(t, editTopLeft, editBottomRight)
	var res struct {
		Commit   string `json:"commit"`
		Files    []string
		Resolved []struct {
			Path, Outcome string
			From          int `json:"chunks_from_theirs"`
		} `json:"resolved"`
	}
	before := shardFiles(t, r)
	r.jsonOf(&res, "merge", "--json", "theirs")
	if len(res.Commit) != 40 || len(res.Resolved) != 1 || res.Resolved[0].Path != "dem.tif" ||
		res.Resolved[0].Outcome != "merged" || res.Resolved[0].From == 0 {
		t.Fatalf("merge: %+v", res)
	}
	checkMerged(t, r, editTopLeft, editBottomRight)
	// A shard the merge left as it was is not written again: writing
	// (and syncing) every shard was most of a small merge's time.
	kept := 0
	for p, a := range shardFiles(t, r) {
		if b, ok := before[p]; ok && bytes.Equal(a.data, b.data) {
			if a.ino != b.ino {
				t.Errorf("%s: the same bytes were written again (inode %d, was %d)", p, a.ino, b.ino)
			}
			kept++
		}
	}
	if kept == 0 || kept == len(before) {
		t.Fatalf("%d of %d shards unchanged by the merge: the test needs some of each", kept, len(before))
	}
}

// shardFile is a work-tree manifest shard: its bytes and inode.
type shardFile struct {
	data []byte
	ino  uint64
}

// shardFiles reads every file under the work tree's .chunkvc/shards.
func shardFiles(t *testing.T, r *runner) map[string]shardFile {
	t.Helper()
	out := map[string]shardFile{}
	err := filepath.WalkDir(r.path(".chunkvc/shards"), func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = shardFile{b, fi.Sys().(*syscall.Stat_t).Ino}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// After a plain git merge stopped on a split manifest, chunkvc merge
// --continue settles it and commits the merge.
func TestGitMergeSplitCOGContinue(t *testing.T) {
	r := splitMergeRepo(t, editTopLeft, editBottomRight)
	if res := r.run("git", "merge", "--no-edit", "theirs"); res.code == 0 || !strings.Contains(res.stderr, "chunkvc merge --continue") {
		t.Fatalf("git merge of a split manifest: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	r.cv("merge", "--continue")
	checkMerged(t, r, editTopLeft, editBottomRight)
}

// The same tile edited on both sides of a split COG stays a conflict that
// names the tile, and git merge --abort restores ours.
func TestMergeCommandSplitCOGConflict(t *testing.T) {
	r := splitMergeRepo(t, editTopLeft, editTopLeftToo)
	ours := r.read("dem.tif")
	res := r.run(binary, "merge", "theirs")
	if res.code != exitFailure || !strings.Contains(res.stdout, "conflict z0/") {
		t.Fatalf("merge of the same tile: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	r.git("merge", "--abort")
	if !bytes.Equal(r.read("dem.tif"), ours) {
		t.Fatal("dem.tif is not ours after git merge --abort")
	}
	r.cv("fsck")
}

// zarrSides writes a Zarr store with zarr-python, or edits it.
const zarrSides = `import sys, numpy as np, zarr
path, step = sys.argv[1], sys.argv[2]
if step == "base":
    a = zarr.open(path + "/t2m", mode="w", shape=(4, 8, 8), chunks=(1, 4, 4), dtype="f4", fill_value=0)
    a[:] = np.arange(256, dtype="f4").reshape(4, 8, 8)
    zarr.open_group(path).attrs["title"] = "test"
    sys.exit()
a = zarr.open(path + "/t2m", mode="r+")
for s in step.split("+"):
    if s == "corner":
        a[0, 0:4, 0:4] = 1
    elif s == "corner2":
        a[0, 0:4, 0:4] = 7
    elif s == "far":
        a[3, 4:8, 4:8] = 2
    elif s == "append":
        a.append(np.full((1, 8, 8), 5, dtype="f4"), axis=0)
`

func zarrStep(t *testing.T, py, dir, step string) {
	t.Helper()
	if out, err := exec.Command(py, "-c", zarrSides, dir, step).CombinedOutput(); err != nil {
		t.Fatalf("zarr %s: %v\n%s", step, err, out)
	}
}

// zarrRepo is a repository on branch main with zarrSides' base store
// cube.zarr committed; it returns the store's path too.
func zarrRepo(t *testing.T, py string) (*runner, string) {
	r := newRunner(t)
	r.git("init", "-q", "-b", "main")
	r.cv("init")
	cube := r.path("cube.zarr")
	zarrStep(t, py, cube, "base")
	r.cv("track", "cube.zarr")
	r.cv("commit", "-q", "-m", "base")
	return r, cube
}

// A Zarr dataset both branches changed, ours a chunk and theirs another
// chunk and an append along time, merges chunk by chunk into the store
// zarr-python makes when one writer does both; the same chunk changed
// differently is a conflict naming it.
func TestMergeCommandZarrDataset(t *testing.T) {
	py := formattest.RequirePython(t, "zarr", "numpy")
	r, cube := zarrRepo(t, py)
	r.git("checkout", "-q", "-b", "theirs")
	zarrStep(t, py, cube, "far+append")
	r.cv("commit", "-q", "-m", "theirs")
	r.git("checkout", "-q", "-b", "clash", "main")
	r.cv("checkout", "--force")
	zarrStep(t, py, cube, "corner2")
	r.cv("commit", "-q", "-m", "clash")
	r.git("checkout", "-q", "main")
	r.cv("checkout", "--force")
	zarrStep(t, py, cube, "corner")
	r.cv("commit", "-q", "-m", "ours")

	r.cv("merge", "theirs")
	want := filepath.Join(t.TempDir(), "want.zarr")
	zarrStep(t, py, want, "base")
	zarrStep(t, py, want, "corner+far+append")
	sameTree(t, "merged store", listing(t, want), listing(t, cube))
	if parents := strings.Fields(r.git("log", "-1", "--format=%P")); len(parents) != 2 {
		t.Fatalf("HEAD is no merge commit: parents %v", parents)
	}
	if st := r.cv("status"); strings.Contains(st, "cube.zarr") {
		t.Fatalf("status after the merge:\n%s", st)
	}
	r.cv("fsck")

	res := r.run(binary, "merge", "clash")
	if res.code != exitFailure || !strings.Contains(res.stdout, "t2m/0.0.0") {
		t.Fatalf("merge of the same chunk: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	conflicts := r.cv("diff", "--conflicts", "--json")
	var rep struct {
		Files []struct {
			Path      string                 `json:"path"`
			Conflicts []struct{ Key string } `json:"conflicts"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(conflicts), &rep); err != nil || len(rep.Files) != 1 || rep.Files[0].Path != "cube.zarr" ||
		len(rep.Files[0].Conflicts) != 1 || rep.Files[0].Conflicts[0].Key != "t2m/0.0.0" {
		t.Fatalf("diff --conflicts of the dataset: %v\n%s", err, conflicts)
	}
	r.git("merge", "--abort")
	sameTree(t, "store after git merge --abort", listing(t, want), listing(t, cube))
}
