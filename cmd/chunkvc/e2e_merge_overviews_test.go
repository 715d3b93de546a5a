package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
)

// ovrCOG makes cogTool's COG 2048² in 256² tiles with overviews down to
// one tile (1024², 512², 256²): any two edits change the top one.
var ovrCOG = []string{"opt:size=2048", "opt:overviews=all"}

// Two far-apart windows, one per branch: each changes one or two
// full-resolution tiles and a tile at every overview level; z3/r0/c0
// (and z2, z1 where the windows share a parent) changed on both sides.
const (
	ovrEditOurs   = "100,120,150,150,0"
	ovrEditTheirs = "1700,1650,200,180,255"
)

// gdalBuild builds chunkvc-gdal into a directory of its own and returns
// that directory, for PATH: the plain chunkvc finds it there.
func gdalBuild(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"gdal_translate", "gdalinfo"} {
		formattest.RequireTool(t, tool)
	}
	dir := t.TempDir()
	if out, err := exec.Command("go", "build", "-tags", "gdal", "-o", filepath.Join(dir, "chunkvc-gdal"), ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -tags gdal: %v\n%s", err, out)
	}
	return dir
}

// ovrMergeRepo is a repository with ovrCOG committed and edited on two
// branches (ours checked out, theirs on branch "theirs"); with gdalDir,
// chunkvc-gdal is on its PATH. opts change their side's profile.
func ovrMergeRepo(t *testing.T, gdalDir string, theirOpts ...string) *runner {
	formattest.RequireTool(t, "git")
	r := newRunner(t)
	if gdalDir != "" {
		onPath(r, gdalDir)
	}
	r.cv("init")
	r.cv("install")
	r.cv("track", "*.tif")
	cog(t, append([]string{"make", r.path("dem.tif")}, ovrCOG...)...)
	r.cv("commit", "-q", "-m", "base")
	editOnBranches(t, r, append(append([]string{ovrEditTheirs}, ovrCOG...), theirOpts...), append([]string{ovrEditOurs}, ovrCOG...))
	return r
}

// chunkIDs are the chunk hashes of REV:dem.tif by key.
func chunkIDs(r *runner, rev string) map[string]string {
	var l lsChunksJSON
	r.jsonOf(&l, "ls-chunks", rev+":dem.tif")
	out := map[string]string{}
	for _, c := range l.Chunks {
		out[c.Key] = c.Hash
	}
	return out
}

// checkOverviewMerge requires the merged COG to be base + both edits at
// full resolution and at every overview level (as gdal_translate -of COG
// of the merged pixels computes them), every tile neither side changed
// to keep the base's bytes, every tile one side changed that side's,
// and only the tiles both sides changed to be new.
func checkOverviewMerge(t *testing.T, r *runner) {
	t.Helper()
	if got := cog(t, append([]string{"check", r.path("dem.tif"), ovrEditOurs, ovrEditTheirs}, ovrCOG...)...); got != "full-res pixels wrong: 0, overview pixels wrong: 0" {
		t.Fatalf("merged COG: %s", got)
	}
	if info := formattest.Run1(t, "gdalinfo", "-checksum", r.path("dem.tif")); !strings.Contains(info, "Overviews: 1024x1024, 512x512, 256x256") {
		t.Fatalf("gdalinfo of the merged COG:\n%s", info)
	}
	base, ours, theirs, merged := chunkIDs(r, "HEAD~1~1"), chunkIDs(r, "HEAD^1"), chunkIDs(r, "HEAD^2"), chunkIDs(r, "HEAD")
	if len(merged) != len(base) {
		t.Fatalf("merged has %d chunks, base %d", len(merged), len(base))
	}
	var fresh []string
	for k, id := range merged {
		switch {
		case ours[k] != base[k] && theirs[k] != base[k]:
			if !strings.HasPrefix(k, "z") || strings.HasPrefix(k, "z0/") {
				t.Fatalf("full-resolution tile %s changed on both sides", k)
			}
			fresh = append(fresh, k)
		case ours[k] != base[k] && id != ours[k], theirs[k] != base[k] && id != theirs[k]:
			t.Fatalf("tile %s changed by one side is not that side's", k)
		case ours[k] == base[k] && theirs[k] == base[k] && id != base[k]:
			t.Fatalf("tile %s changed by neither side has new bytes", k)
		}
	}
	if len(fresh) == 0 {
		t.Fatal("no overview tile changed on both sides: the test proves nothing")
	}
	if st := r.cv("status"); strings.Contains(st, "dem.tif") {
		t.Fatalf("status after the merge:\n%s", st)
	}
	r.cv("fsck")
	if string(r.read("dem.tif")) != r.cv("cat", "HEAD:dem.tif") {
		t.Fatal("chunkvc cat HEAD:dem.tif differs from the merged work file")
	}
}

// Two branches that edited far-apart windows of a COG with overviews
// down to one tile merge with a plain git merge: the overview tiles both
// changed are regenerated from the merged pixels by chunkvc-gdal.
func TestGitMergeCOGRegeneratesOverviews(t *testing.T) {
	r := ovrMergeRepo(t, gdalBuild(t))
	res := r.run("git", "merge", "--no-edit", "theirs")
	if res.code != 0 {
		t.Fatalf("git merge: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if !strings.Contains(res.stderr, "overview tiles regenerated from the merged pixels") {
		t.Fatalf("git merge did not regenerate overviews:\n%s", res.stderr)
	}
	checkOverviewMerge(t, r)
}

// chunkvc merge does the same, and says so in its JSON.
func TestMergeCommandRegeneratesOverviews(t *testing.T) {
	r := ovrMergeRepo(t, gdalBuild(t))
	var run struct {
		Commit string   `json:"commit"`
		Files  []string `json:"files"`
	}
	r.jsonOf(&run, "merge", "theirs")
	if run.Commit == "" || strings.Join(run.Files, " ") != "dem.tif" {
		t.Fatalf("merge: %+v", run)
	}
	checkOverviewMerge(t, r)
}

// Without GDAL the overview tiles both sides changed stay conflicts,
// naming their level and bbox and what regenerating them needs.
func TestGitMergeCOGOverviewsWithoutGDAL(t *testing.T) {
	r := ovrMergeRepo(t, "")
	res := r.run("git", "merge", "--no-edit", "theirs")
	text := string(r.read(".chunkvc/manifests/dem.tif"))
	if res.code == 0 || !strings.Contains(text, "conflict z3/r0/c0 [") ||
		!strings.Contains(text, "overview level 3 tile changed on both sides: not regenerated, regenerating overviews needs GDAL") {
		t.Fatalf("git merge: exit %d\n%s\n%s", res.code, text, res.stderr)
	}
	r.git("merge", "--abort")
}

// Sides with different profiles (their side re-encoded with LZW) are a
// conflict saying so, even with GDAL: their tiles cannot be spliced into
// ours, nor the overviews regenerated in one codec.
func TestGitMergeCOGOverviewsProfilesDiffer(t *testing.T) {
	r := ovrMergeRepo(t, gdalBuild(t), "opt:compress=LZW")
	before := r.read("dem.tif")
	res := r.run("git", "merge", "--no-edit", "theirs")
	text := string(r.read(".chunkvc/manifests/dem.tif"))
	if res.code == 0 || !strings.Contains(text, `compression is "deflate" on ours, "lzw" on theirs`) ||
		!strings.Contains(text, "overview level 3 tile changed on both sides: not regenerated, the sides' profiles differ") {
		t.Fatalf("git merge: exit %d\n%s\n%s", res.code, text, res.stderr)
	}
	if string(r.read("dem.tif")) != string(before) {
		t.Fatal("a conflicted merge changed the work file")
	}
	r.git("merge", "--abort")
}
