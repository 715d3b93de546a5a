package main

import (
	"os"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
)

// A link added inside a committed Zarr store is what commit refuses; status
// must say so (refused, naming the link) rather than call the store clean,
// and be clean again once the link is gone.
func TestDatasetLinkStatus(t *testing.T) {
	py := formattest.RequirePython(t, "zarr", "numpy")
	r := newRunner(t)
	r.git("init", "-q", "-b", "main")
	r.cv("init")
	r.python(t, py, cubeSteps[0])
	r.cv("track", "cube.zarr")
	r.cv("commit", "-q", "-m", "v1")
	if err := os.Symlink("temp/.zarray", r.path("cube.zarr/extra")); err != nil {
		t.Fatal(err)
	}
	st := r.cv("status")
	if !strings.Contains(st, "refused") || !strings.Contains(st, "extra: not a regular file") {
		t.Fatalf("status with a link in the store: %q", st)
	}
	if res := r.run(binary, "commit", "-m", "v2"); res.code == exitOK || !strings.Contains(res.stderr, "extra") {
		t.Fatalf("commit with a link in the store: exit %d\n%s", res.code, res.stderr)
	}
	if err := os.Remove(r.path("cube.zarr/extra")); err != nil {
		t.Fatal(err)
	}
	if st := r.cv("status"); st != "" {
		t.Fatalf("status once the link is gone: %q", st)
	}
}
