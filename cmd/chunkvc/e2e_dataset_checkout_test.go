package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
)

// listing maps every file under dir (slash path from dir) to a digest of
// its bytes: comparing two listings is `diff -r` that also fails on an
// extra or missing file, empty ones included.
func listing(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		sum := sha256.Sum256(b)
		out[filepath.ToSlash(rel)] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameTree fails unless got holds exactly the files of want, byte for byte.
func sameTree(t testing.TB, what string, want, got map[string]string) {
	t.Helper()
	var bad []string
	for p, w := range want {
		switch g, ok := got[p]; {
		case !ok:
			bad = append(bad, "missing "+p)
		case g != w:
			bad = append(bad, "differs "+p)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			bad = append(bad, "extra "+p)
		}
	}
	if len(bad) > 0 {
		t.Fatalf("%s: %d files wrong: %s", what, len(bad), strings.Join(bad[:min(len(bad), 10)], ", "))
	}
}

// copyTree copies dir to dst with cp -r (the test's work tree, never the
// repository's sources).
func copyTree(t testing.TB, dir, dst string) {
	t.Helper()
	if out, err := exec.Command("cp", "-r", dir, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp -r %s %s: %v\n%s", dir, dst, err, out)
	}
}

// storeRoots returns the topmost directories under dir (slash paths from
// base) with Zarr metadata at their root: dir itself when it is a store.
func storeRoots(t testing.TB, base, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		for _, meta := range []string{"zarr.json", ".zarray", ".zgroup"} {
			if _, err := os.Stat(filepath.Join(p, meta)); err == nil {
				rel, _ := filepath.Rel(base, p)
				out = append(out, filepath.ToSlash(rel))
				return filepath.SkipDir
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// statCache reads the stat cache file: status rewrites it when it hashes
// a store, and leaves it alone when the stamp alone says clean.
func statCache(t testing.TB, r *runner) []byte {
	t.Helper()
	b, err := os.ReadFile(r.path(".git/chunkvc/statcache"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Every store of the shared corpus is committed as a dataset, removed,
// and checked out exactly: same files, same bytes, nothing extra; status
// then says clean without hashing a store.
func TestCheckoutDatasetCorpus(t *testing.T) {
	stores, err := filepath.Glob(filepath.Join(formattest.CorpusDir(t), "zarr", "*.zarr"))
	if err != nil || len(stores) == 0 {
		t.Fatalf("no zarr stores in the corpus (%v)", err)
	}
	r := newRunner(t)
	r.git("init", "-q")
	r.cv("init")
	want := map[string]map[string]string{}
	tracked := 0
	for _, s := range stores {
		name := filepath.Base(s)
		copyTree(t, s, r.path(name))
		want[name] = listing(t, s)
		for _, ds := range storeRoots(t, r.dir, r.path(name)) {
			r.cv("track", ds)
			tracked++
		}
	}
	if tracked < len(stores) {
		t.Fatalf("tracked %d stores of %d corpus directories", tracked, len(stores))
	}
	r.cv("commit", "-q", "-m", "corpus")
	for name := range want {
		if err := os.RemoveAll(r.path(name)); err != nil {
			t.Fatal(err)
		}
	}
	r.cv("checkout")
	for name, w := range want {
		sameTree(t, name, w, listing(t, r.path(name)))
	}
	before := statCache(t, r)
	if st := r.cv("status"); st != "" {
		t.Fatalf("status after checkout: %q", st)
	}
	if !bytes.Equal(before, statCache(t, r)) {
		t.Fatal("status after checkout hashed stores again (it rewrote the stat cache)")
	}
	// A second checkout writes nothing: every store is up to date.
	if out := r.cv("checkout"); strings.Contains(out, "wrote") {
		t.Fatalf("checkout of an up-to-date work tree wrote: %s", out)
	}
}

// cubeSteps edit cube.zarr, one step per commit: made, appended along
// time, a second array and new attributes, that array removed and the
// cube cut back (its last chunk files go).
var cubeSteps = []string{
	`g = zarr.open_group("cube.zarr", mode="w")
a = g.create_dataset("temp", shape=(2, 4, 6), chunks=(1, 4, 3), dtype="f4", fill_value=-1)
a[:] = np.arange(48, dtype="f4").reshape(2, 4, 6)
g.attrs["title"] = "cube"`,
	`a = zarr.open_group("cube.zarr")["temp"]
a.append(np.full((2, 4, 6), 7.5, dtype="f4"), axis=0)`,
	`g = zarr.open_group("cube.zarr")
p = g.create_dataset("precip", shape=(4, 4), chunks=(2, 2), dtype="i2", fill_value=0)
p[0:2, :] = 3
g.attrs["title"] = "cube with rain"`,
	`import shutil
shutil.rmtree("cube.zarr/precip")
a = zarr.open_group("cube.zarr")["temp"]
a.resize(3, 4, 6)
a[2, 0, 0] = 99`,
}

// cubeValues prints what zarr-python reads of cube.zarr: every array's
// values and attributes, and the group's.
const cubeValues = `import json, sys
g = zarr.open_group("cube.zarr", mode="r")
out = {"attrs": dict(g.attrs)}
for name, a in sorted(g.arrays()):
    out[name] = {"shape": list(a.shape), "values": a[:].tolist(), "attrs": dict(a.attrs)}
print(json.dumps(out, sort_keys=True))`

func (r *runner) python(t testing.TB, py, script string) string {
	t.Helper()
	cmd := exec.Command(py, "-c", "import numpy as np, zarr\n"+script)
	cmd.Dir = r.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s\n%s", err, script, out)
	}
	return string(out)
}

// A zarr-python cube edited across commits (appended along time, an array
// added then removed, attributes changed, chunks cut back) is checked out
// at each revision, forward and back, without HEAD moving and after git
// switch: the store is each time exactly as committed and zarr-python
// reads the same values; status is clean after each.
func TestCheckoutDatasetCubeRevisions(t *testing.T) {
	py := formattest.RequirePython(t, "zarr", "numpy")
	r := newRunner(t)
	r.git("init", "-q", "-b", "main")
	r.cv("init")
	snaps := t.TempDir()
	var revs []string
	var values []string
	var trees []map[string]string
	for i, step := range cubeSteps {
		r.python(t, py, step)
		if i == 0 {
			r.cv("track", "cube.zarr")
		}
		r.cv("commit", "-q", "-m", "step")
		revs = append(revs, strings.TrimSpace(r.git("rev-parse", "HEAD")))
		values = append(values, r.python(t, py, cubeValues))
		trees = append(trees, listing(t, r.path("cube.zarr")))
		copyTree(t, r.path("cube.zarr"), filepath.Join(snaps, revs[i]))
	}
	check := func(i int, how string) {
		t.Helper()
		sameTree(t, how+" step "+revs[i][:7], trees[i], listing(t, r.path("cube.zarr")))
		if got := r.python(t, py, cubeValues); got != values[i] {
			t.Fatalf("%s step %d: zarr-python reads\n%s\nwant\n%s", how, i, got, values[i])
		}
	}
	for _, i := range []int{0, 1, 2, 3, 2, 0, 3, 1} {
		r.cv("checkout", revs[i])
		check(i, "checkout REV")
	}
	r.cv("checkout") // back to HEAD, the last step
	check(len(revs)-1, "checkout HEAD")
	if st := r.cv("status"); st != "" {
		t.Fatalf("status after checkout: %q", st)
	}
	for _, i := range []int{1, 2, 0} {
		r.git("switch", "-q", "--detach", revs[i])
		r.cv("checkout")
		check(i, "git switch")
		if st := r.cv("status"); st != "" {
			t.Fatalf("status after git switch and checkout: %q", st)
		}
	}
	// A member changed by hand is uncommitted work: refused, then forced.
	r.write("cube.zarr/temp/0.0.0", []byte("edited"))
	if res := r.run(binary, "checkout", revs[2]); res.code == 0 || !strings.Contains(res.stderr, "not committed") {
		t.Fatalf("checkout over an edited store: exit %d %s", res.code, res.stderr)
	}
	if string(r.read("cube.zarr/temp/0.0.0")) != "edited" {
		t.Fatal("a refused checkout wrote the store")
	}
	r.cv("checkout", "--force", revs[2])
	check(2, "checkout --force")
	// A dataset the target lacks is removed, folder and all.
	r.git("switch", "-q", "main")
	r.cv("checkout")
	r.git("switch", "-q", "-c", "gone")
	if err := os.RemoveAll(r.path("cube.zarr")); err != nil {
		t.Fatal(err)
	}
	r.write("other.bin", []byte("x"))
	r.cv("track", "*.bin")
	r.cv("commit", "-q", "-m", "no cube")
	r.git("switch", "-q", "main")
	r.cv("checkout")
	check(len(revs)-1, "back on main")
	r.git("switch", "-q", "gone")
	r.cv("checkout")
	if _, err := os.Stat(r.path("cube.zarr")); !os.IsNotExist(err) {
		t.Fatalf("checkout of a commit without the dataset left it: %v", err)
	}
}
