package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
)

// git cherry-pick and git rebase merge data with the driver as git merge
// does: a pick of their COG edit onto ours (different tiles) holds both
// windows; on a split COG the pick stops, chunkvc merge --continue
// settles it and git cherry-pick --continue commits. chunkvc checkout
// then writes what the picked commit changed elsewhere.
func TestGitCherryPickAndRebaseCOG(t *testing.T) {
	t.Run("cherry-pick", func(t *testing.T) {
		r, _ := mergeRepo(t, editBottomRight)
		cog(t, "edit", r.path("dem.tif"), editTopLeft)
		r.cv("commit", "-q", "-m", "ours")
		r.git("cherry-pick", "theirs")
		r.cv("checkout")
		if got := cog(t, "check", r.path("dem.tif"), editTopLeft, editBottomRight); got != "full-res pixels wrong: 0, overview pixels wrong: 0" {
			t.Fatalf("picked COG: %s", got)
		}
		clean(t, r, "after the cherry-pick")
		r.cv("fsck")
	})
	t.Run("rebase", func(t *testing.T) {
		r, _ := mergeRepo(t, editBottomRight)
		cog(t, "edit", r.path("dem.tif"), editTopLeft)
		r.cv("commit", "-q", "-m", "ours")
		r.git("rebase", "-q", "theirs")
		r.cv("checkout")
		if got := cog(t, "check", r.path("dem.tif"), editTopLeft, editBottomRight); got != "full-res pixels wrong: 0, overview pixels wrong: 0" {
			t.Fatalf("rebased COG: %s", got)
		}
		if log := r.git("log", "--format=%s"); !strings.HasPrefix(log, "ours\ntheirs\n") {
			t.Fatalf("history after the rebase:\n%s", log)
		}
		clean(t, r, "after the rebase")
		r.cv("fsck")
	})
	t.Run("split cherry-pick", func(t *testing.T) {
		r := splitMergeRepo(t, editTopLeft, editBottomRight)
		if res := r.run("git", "cherry-pick", "theirs"); res.code == 0 {
			t.Fatal("git cherry-pick of a split manifest went through alone")
		}
		r.cv("merge", "--continue")
		r.run("git", "-c", "core.editor=true", "cherry-pick", "--continue")
		if got := cog(t, append([]string{"check", r.path("dem.tif"), editTopLeft, editBottomRight}, splitCOG...)...); got != "full-res pixels wrong: 0, overview pixels wrong: 0" {
			t.Fatalf("picked COG: %s", got)
		}
		if parents := strings.Fields(r.git("log", "-1", "--format=%P %s")); len(parents) != 2 || parents[1] != "theirs" {
			t.Fatalf("HEAD after the pick: %v", parents)
		}
		clean(t, r, "after the cherry-pick")
		r.cv("fsck")
	})
}

// A rebase of a Zarr dataset edit onto a branch that changed another
// chunk stops on the dataset (git rebase switches commits without
// chunkvc checkout); chunkvc merge --continue settles it from whatever
// committed version the work tree holds, and git rebase --continue
// finishes with both chunks in the store.
func TestGitRebaseZarrDataset(t *testing.T) {
	py := formattest.RequirePython(t, "zarr", "numpy")
	r := newRunner(t)
	r.git("init", "-q", "-b", "main")
	r.cv("init")
	r.cv("install")
	cube := r.path("cube.zarr")
	zarrStep(t, py, cube, "base")
	r.cv("track", "cube.zarr")
	r.cv("commit", "-q", "-m", "base")
	r.git("checkout", "-q", "-b", "theirs")
	zarrStep(t, py, cube, "far")
	r.cv("commit", "-q", "-m", "theirs")
	r.git("checkout", "-q", "main")
	r.cv("checkout", "--force")
	zarrStep(t, py, cube, "corner")
	r.cv("commit", "-q", "-m", "ours")
	if res := r.run("git", "rebase", "-q", "theirs"); res.code == 0 {
		t.Fatal("git rebase of a dataset went through alone")
	}
	r.cv("merge", "--continue")
	r.run("git", "-c", "core.editor=true", "rebase", "--continue")
	want := filepath.Join(t.TempDir(), "want.zarr")
	zarrStep(t, py, want, "base")
	zarrStep(t, py, want, "far+corner")
	sameTree(t, "rebased store", listing(t, want), listing(t, cube))
	if log := r.git("log", "--format=%s"); !strings.HasPrefix(log, "ours\ntheirs\n") {
		t.Fatalf("history after the rebase:\n%s", log)
	}
	if st := r.cv("status"); strings.Contains(st, "cube.zarr") {
		t.Fatalf("status after the rebase:\n%s", st)
	}
	r.cv("fsck")
}
