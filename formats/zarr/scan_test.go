package zarr

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
)

const smallZArray = `{"zarr_format": 2, "shape": [4, 4], "chunks": [2, 2], "dtype": "<i2", "compressor": null, "fill_value": 0, "order": "C", "filters": null}`

// writeTree writes files (store path → content) under dir.
func writeTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for p, data := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestScanOddFiles: files that are not chunks are listed as other with the
// reason; links are neither followed nor read; a node whose metadata is
// broken keeps its documents and leaves its chunks other, and nothing else.
func TestScanOddFiles(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"secret/0.0": "x", "secret.txt": "s"})
	writeTree(t, dir, map[string]string{
		".zgroup":            `{"zarr_format": 2}`,
		".zattrs":            `{"title": "t"}`,
		"README.md":          "hello",
		"good/.zarray":       smallZArray,
		"good/0.0":           "c",
		"good/1.1":           "c",
		"good/2.0":           "out of grid",
		"good/0.0.bak":       "editor",
		"good/.DS_Store":     "finder",
		"broken/.zarray":     `{"zarr_format": 2, "shape": [4], "chunks": [0]}`,
		"broken/0":           "c",
		"both/.zarray":       smallZArray,
		"both/.zgroup":       `{"zarr_format": 2}`,
		"plain/notes/x.csv":  "1,2",
		"nested/g/.zgroup":   `{"zarr_format": 2}`,
		"nested/g/a/.zarray": smallZArray,
		"nested/g/a/1.0":     "c",
	})
	for link, target := range map[string]string{"good/0.1": filepath.Join(outside, "secret.txt"), "linked": filepath.Join(outside, "secret")} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "good", "1.0"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, files := checkStore(t, dir)
	want := map[string]string{
		"README.md":         "in group the root",
		"good/2.0":          "outside the grid",
		"good/0.0.bak":      "more than 2 coordinates",
		"good/.DS_Store":    "not a decimal",
		"good/0.1":          "symbolic link",
		"good/1.0":          "not a regular file",
		"linked":            "symbolic link",
		"broken/0":          "broken, whose metadata",
		"plain/notes/x.csv": "in group the root",
	}
	chunks := map[string]bool{"good/0.0": true, "good/1.1": true, "nested/g/a/1.0": true}
	for _, f := range files {
		switch {
		case want[f.Path] != "":
			if f.Role != RoleOther || !strings.Contains(f.Reason, want[f.Path]) {
				t.Errorf("%s: %v %q, want other %q", f.Path, f.Role, f.Reason, want[f.Path])
			}
		case chunks[f.Path]:
			if f.Role != RoleChunk {
				t.Errorf("%s: %v %q", f.Path, f.Role, f.Reason)
			}
		case f.Role != RoleMeta:
			t.Errorf("%s: %v %q, want meta", f.Path, f.Role, f.Reason)
		}
	}
	var errs []string
	for _, n := range st.Nodes {
		if n.Err != nil {
			errs = append(errs, n.Path+": "+n.Err.Error())
		}
	}
	if len(errs) != 2 || !strings.Contains(errs[0], "beside a .zgroup") || !strings.Contains(errs[1], "chunks[0] = 0") {
		t.Errorf("node errors %q", errs)
	}
	if st.Unsupported != "" || st.Version != 2 || len(st.Nodes) != 6 {
		t.Errorf("store %+v", st)
	}
}

func TestScanNotAStore(t *testing.T) {
	if _, err := Walk(fstest.MapFS{"a/.zarray": {Data: []byte(smallZArray)}}, nil); !errors.Is(err, ErrNotStore) {
		t.Errorf("a directory without root metadata: %v", err)
	}
	dir, outside := t.TempDir(), t.TempDir()
	writeTree(t, outside, map[string]string{".zgroup": `{"zarr_format": 2}`})
	if err := os.Symlink(filepath.Join(outside, ".zgroup"), filepath.Join(dir, ".zgroup")); err != nil {
		t.Fatal(err)
	}
	if Detect(os.DirFS(dir)) {
		t.Error("a root .zgroup that is a link detected")
	}
	if _, _, err := ScanDir(dir); !errors.Is(err, ErrNotStore) {
		t.Errorf("a root .zgroup that is a link: %v", err)
	}
}

// TestScanBrokenRoot: a root whose metadata is not understood makes the
// store unsupported, every file other.
func TestScanBrokenRoot(t *testing.T) {
	st, files, err := Scan(fstest.MapFS{
		"zarr.json": {Data: []byte(`{"zarr_format": 3, "node_type": "array", "shape": [4]}`)},
		"c/0":       {Data: []byte("c")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(st.Unsupported, "root metadata") || len(files) != 2 {
		t.Fatalf("store %+v, %d files", st, len(files))
	}
	for _, f := range files {
		if f.Role != RoleOther {
			t.Errorf("%s: %v", f.Path, f.Role)
		}
	}
}

// TestWalkStops: an error from the callback stops the walk and comes back.
func TestWalkStops(t *testing.T) {
	stop := errors.New("stop")
	n := 0
	_, err := Walk(fstest.MapFS{".zgroup": {Data: []byte(`{"zarr_format": 2}`)}, "a": {}, "b": {}}, func(*File) error {
		n++
		return stop
	})
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("err %v after %d calls", err, n)
	}
}

// BenchmarkWalk walks a v2 store of 100×200 chunk files in nested
// directories (dimension_separator "/"); ns/op is per store.
func BenchmarkWalk(b *testing.B) {
	dir := b.TempDir()
	files := map[string]string{
		".zgroup":     `{"zarr_format": 2}`,
		"t2m/.zarray": strings.Replace(strings.Replace(smallZArray, `[4, 4]`, `[100, 200]`, 1), `"chunks": [2, 2]`, `"chunks": [1, 1], "dimension_separator": "/"`, 1),
	}
	for i := 0; i < 100; i++ {
		for j := 0; j < 200; j++ {
			files["t2m/"+strconv.Itoa(i)+"/"+strconv.Itoa(j)] = "c"
		}
	}
	writeTree(b, dir, files)
	b.ResetTimer()
	for b.Loop() {
		n := 0
		if _, err := Walk(os.DirFS(dir), func(f *File) error {
			if f.Role == RoleChunk {
				n++
			}
			return nil
		}); err != nil || n != 20000 {
			b.Fatalf("%d chunks, %v", n, err)
		}
	}
}
