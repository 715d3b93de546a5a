package dataset

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// A folder of a store is listed whole (a store of small chunks can hold a
// million files in one): the listing holds its paths, lstats and
// entries (104 bytes a file), not a wrapper of each entry too (121).
func TestReadDirAllocsPerFile(t *testing.T) {
	const n = 20_000
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "t2m"), 0o777); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, "t2m", fmt.Sprintf("%d.0.0", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	es, err := statFS{root: root, dir: dir}.ReadDir("t2m")
	runtime.GC()
	runtime.ReadMemStats(&after)
	if err != nil || len(es) != n {
		t.Fatalf("%d entries, %v", len(es), err)
	}
	for _, e := range es[:3] {
		if fi, err := e.Info(); err != nil || !fi.Mode().IsRegular() || e.IsDir() || e.Type() != 0 {
			t.Fatalf("%s: %v %v", e.Name(), fi, err)
		}
	}
	per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
	t.Logf("%d bytes a file", per)
	if per > 112 {
		t.Errorf("listing holds %d bytes a file, want at most 112", per)
	}
	runtime.KeepAlive(es)
}
