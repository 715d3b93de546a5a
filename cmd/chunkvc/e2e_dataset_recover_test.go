package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
)

// A checkout of a dataset killed half-way leaves a store with some
// members of each version (and perhaps a temp file) and the dataset
// listed in checkout-unfinished: status still runs, and the next checkout
// finishes it without --force, exactly, temp files gone.
func TestCheckoutDatasetKilled(t *testing.T) {
	py := formattest.RequirePython(t, "zarr", "numpy")
	r := newRunner(t)
	r.git("init", "-q", "-b", "main")
	r.cv("init")
	r.python(t, py, `a = zarr.open("cube.zarr", mode="w", shape=(3000,), chunks=(1,), dtype="i4", compressor=None)
a[:] = np.arange(3000)`)
	r.cv("track", "cube.zarr")
	r.cv("commit", "-q", "-m", "v1")
	r.python(t, py, `a = zarr.open("cube.zarr")
a[:] = np.arange(3000) * 7 + 1`)
	r.cv("commit", "-q", "-m", "v2")
	v2 := listing(t, r.path("cube.zarr"))
	mid := r.read("cube.zarr/1500")
	r.cv("checkout", "HEAD~1")
	if bytes.Equal(r.read("cube.zarr/1500"), mid) {
		t.Fatal("versions do not differ at the chunk the kill waits for")
	}
	killed := r.killWhen(t, func() bool {
		b, err := os.ReadFile(r.path("cube.zarr/1500"))
		return err == nil && bytes.Equal(b, mid)
	}, "checkout", "-q", "HEAD")
	if !killed {
		t.Log("the checkout finished before the kill")
	} else if _, err := os.Stat(r.path(".git/chunkvc/checkout-unfinished")); err != nil {
		t.Fatalf("a killed checkout left no record: %v", err)
	}
	// What a kill between a temp file's write and its rename leaves.
	r.write("cube.zarr/2999.chunkvc-tmp-0123456789ab", []byte("half"))
	if res := r.run(binary, "status"); res.code != 0 {
		t.Fatalf("status after a killed checkout: exit %d %s", res.code, res.stderr)
	}
	r.cv("checkout", "-q")
	sameTree(t, "after the killed checkout", v2, listing(t, r.path("cube.zarr")))
	if _, err := os.Stat(r.path(".git/chunkvc/checkout-unfinished")); err == nil {
		t.Fatal("the finished checkout left the record")
	}
	if st := r.cv("status"); st != "" {
		t.Fatalf("status after the checkout finished: %q", st)
	}
}

// A clone writes its datasets; a lazy clone writes none until checkout,
// which fetches their chunks from the remote store; pull's fast-forward
// brings the next version. Each time the store is exactly as committed.
func TestCheckoutDatasetCloneLazyPull(t *testing.T) {
	py := formattest.RequirePython(t, "zarr", "numpy")
	a := newRunner(t)
	a.git("init", "-q", "-b", "main")
	a.cv("init")
	a.python(t, py, cubeSteps[0])
	a.cv("track", "cube.zarr")
	a.cv("commit", "-q", "-m", "v1")
	v1 := listing(t, a.path("cube.zarr"))

	b := newRunner(t)
	b.cv("clone", a.dir, "c")
	sameTree(t, "clone", v1, listing(t, b.path("c/cube.zarr")))

	lz := newRunner(t)
	lz.cv("clone", "--lazy", a.dir, "l")
	if _, err := os.Stat(lz.path("l/cube.zarr")); !os.IsNotExist(err) {
		t.Fatalf("lazy clone wrote the dataset: %v", err)
	}
	lz.dir = lz.path("l")
	if st := lz.cv("status"); st != "" {
		t.Fatalf("status in a lazy clone: %q", st)
	}
	var co struct {
		Files []struct {
			Path          string `json:"path"`
			ChunksFetched int    `json:"chunks_fetched"`
			ChunksLocal   int    `json:"chunks_local"`
		} `json:"files"`
	}
	lz.jsonOf(&co, "checkout", "--", "cube.zarr")
	sameTree(t, "lazy clone checkout", v1, listing(t, lz.path("cube.zarr")))
	// A local clone reads the origin's store as an alternate (local).
	if len(co.Files) != 1 || co.Files[0].ChunksFetched+co.Files[0].ChunksLocal == 0 {
		t.Fatalf("lazy checkout read no chunk through the read path: %+v", co.Files)
	}
	if st := lz.cv("status"); st != "" {
		t.Fatalf("status after the lazy checkout: %q", st)
	}

	a.python(t, py, cubeSteps[1])
	a.cv("commit", "-q", "-m", "v2")
	v2 := listing(t, a.path("cube.zarr"))
	b.dir = b.path("c")
	b.cv("pull")
	sameTree(t, "pull", v2, listing(t, b.path("cube.zarr")))
	if st := b.cv("status"); st != "" {
		t.Fatalf("status after pull: %q", st)
	}
}

// checkout --bbox of a dataset writes its metadata and the chunks whose
// footprint meets the box (every chunk when none has a footprint), marks
// it partial for status and commit, and a full checkout makes it whole.
func TestCheckoutDatasetBBox(t *testing.T) {
	py := formattest.RequirePython(t, "zarr", "numpy")
	r := newRunner(t)
	r.git("init", "-q", "-b", "main")
	r.cv("init")
	r.python(t, py, cubeSteps[0])
	r.cv("track", "cube.zarr")
	r.cv("commit", "-q", "-m", "v1")
	full := listing(t, r.path("cube.zarr"))
	want := full
	if manifestHasBBox(t, r) {
		t.Skip("the cube's chunks have footprints: this test expects none")
	}
	if err := os.RemoveAll(r.path("cube.zarr")); err != nil {
		t.Fatal(err)
	}
	r.cv("checkout", "--bbox", "0,0,1,1", "--", "cube.zarr")
	sameTree(t, "checkout --bbox", want, listing(t, r.path("cube.zarr")))
	if st := r.cv("status"); !strings.Contains(st, "partial") || !strings.Contains(st, "cube.zarr") {
		t.Fatalf("status after checkout --bbox: %q", st)
	}
	if res := r.run(binary, "commit", "-m", "oops"); res.code != exitRefused || !strings.Contains(res.stderr, "partial") {
		t.Fatalf("commit of a partial dataset: exit %d (want %d)\n%s%s", res.code, exitRefused, res.stdout, res.stderr)
	}
	r.cv("checkout", "--", "cube.zarr")
	sameTree(t, "full checkout after --bbox", full, listing(t, r.path("cube.zarr")))
	if st := r.cv("status"); st != "" {
		t.Fatalf("status after the full checkout: %q", st)
	}
}

// manifestHasBBox reports whether any manifest file or shard of the
// repository has a chunk footprint.
func manifestHasBBox(t testing.TB, r *runner) bool {
	t.Helper()
	found := false
	err := filepath.WalkDir(r.path(".chunkvc"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte("bbox")) {
			found = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}
