package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
	"github.com/chunkvc/chunkvc/internal/miniotest"
)

// workerEdits are four windows of cogTool's COG in four different tiles
// at full resolution and in the overview.
var workerEdits = []string{"10,10,100,100,0", "900,10,100,100,50", "10,900,100,100,100", "900,880,100,120,255"}

// Four workers in four clones, one MinIO store and one bare Git remote,
// each editing its own tiles of one COG and its own partition of a
// GeoParquet lake at the same time, push until the push goes through,
// with chunkvc pull (fetch and merge) after each refusal. The final main
// holds every worker's edit (GDAL reads all four windows; each partition
// is byte for byte its worker's), every worker's commit is in history,
// and fsck --remote is clean.
func TestWorkersPullMergePush(t *testing.T) {
	py := formattest.RequirePython(t, "osgeo.gdal", "numpy")
	srv := miniotest.Start(t)
	gen := buildTool(t, "../../scripts/mkgeoparquet")
	part := func(dir string, i int, edited bool) string {
		p := filepath.Join(dir, "lake", fmt.Sprintf("part=%d", i), "data.parquet")
		args := []string{"-o", p, "-rows", "20000", "-rowgroups", "4", "-seed", fmt.Sprint(i + 1)}
		if edited {
			args = append(args, "-edit-rows", "50", "-edit-rg", "1")
		}
		return strings.Join(append([]string{gen}, args...), "\x00")
	}
	runArgs := func(joined string) error {
		args := strings.Split(joined, "\x00")
		if err := os.MkdirAll(filepath.Dir(args[2]), 0o755); err != nil {
			return err
		}
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%v: %w\n%s", args, err, out)
		}
		return nil
	}

	a := newRunner(t)
	a.env = append(a.env, srv.Env()...)
	a.git("init", "-q", "-b", "main")
	a.cv("init", "--store", "s3://chunkvc-test/workers")
	a.cv("install")
	a.cv("track", "*.tif", "*.parquet")
	cog(t, "make", a.path("dem.tif"))
	for i := range workerEdits {
		if err := runArgs(part(a.dir, i, false)); err != nil {
			t.Fatal(err)
		}
	}
	a.cv("commit", "-q", "-m", "base")
	bare := filepath.Join(t.TempDir(), "origin.git")
	a.git("init", "-q", "--bare", "-b", "main", bare)
	a.git("remote", "add", "origin", bare)
	a.cv("push")

	workers := make([]*runner, len(workerEdits))
	for i := range workers {
		w := newRunner(t)
		w.env = a.env
		w.cv("clone", bare, "w")
		w.dir = w.path("w")
		w.cv("install")
		workers[i] = w
	}
	var wg sync.WaitGroup
	errs := make([]error, len(workers))
	pulls := make([]int, len(workers))
	for i, w := range workers {
		wg.Go(func() {
			errs[i] = work(w, py, i, func() error { return runArgs(part(w.dir, i, true)) }, &pulls[i])
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("worker %d: %v", i, err)
		}
	}
	t.Logf("pulls before each push went through: %v", pulls)

	c := newRunner(t)
	c.env = a.env
	c.cv("clone", bare, "c")
	c.dir = c.path("c")
	if got := cog(t, append([]string{"check", c.path("dem.tif")}, workerEdits...)...); got != "full-res pixels wrong: 0, overview pixels wrong: 0" {
		t.Fatalf("final COG: %s", got)
	}
	want := t.TempDir()
	for i := range workerEdits {
		if err := runArgs(part(want, i, true)); err != nil {
			t.Fatal(err)
		}
		rel := filepath.Join("lake", fmt.Sprintf("part=%d", i), "data.parquet")
		w, err := os.ReadFile(filepath.Join(want, rel))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(c.read(rel), w) {
			t.Fatalf("%s is not worker %d's edit", rel, i)
		}
	}
	log := c.git("log", "--format=%s")
	for i := range workers {
		if !strings.Contains(log, fmt.Sprintf("worker %d\n", i)) {
			t.Fatalf("worker %d's commit is not in history:\n%s", i, log)
		}
	}
	c.cv("fsck", "--remote")
}

// work is one worker: edit its tiles and partition, commit, and push
// until the push goes through, pulling (fetch and merge) after each
// refusal.
func work(w *runner, py string, i int, editPart func() error, pulls *int) error {
	if out, err := exec.Command(py, "-c", cogTool, "edit", w.path("dem.tif"), workerEdits[i]).CombinedOutput(); err != nil {
		return fmt.Errorf("edit: %w\n%s", err, out)
	}
	if err := editPart(); err != nil {
		return err
	}
	if res := w.run(binary, "commit", "-q", "-m", fmt.Sprintf("worker %d", i)); res.code != 0 {
		return fmt.Errorf("commit: exit %d\n%s", res.code, res.stderr)
	}
	for try := 0; try < 12; try++ {
		res := w.run(binary, "push")
		if res.code == 0 {
			return nil
		}
		*pulls++
		if res := w.run(binary, "pull"); res.code != 0 {
			return fmt.Errorf("pull after a refused push (%s): exit %d\n%s%s", strings.TrimSpace(res.stderr), res.code, res.stdout, res.stderr)
		}
	}
	return fmt.Errorf("no push went through in 12 tries")
}
