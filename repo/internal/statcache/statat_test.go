package statcache

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestStatNamesMatchesOS checks that StatNames answers as os.Stat and
// os.Lstat do, for what status and commit ask: stat, mode, size, time,
// link count, and the error of a missing name; and through a folder that
// cannot be opened (a file), per path.
func TestStatNamesMatchesOS(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	write("a.csv", "1,2\n")
	write("b.csv", "longer file\n")
	if err := os.Symlink("a.csv", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(dir, "b.csv"), filepath.Join(dir, "b2")); err != nil {
		t.Fatal(err)
	}
	names := []string{"a.csv", "link", "sub", "missing", "b.csv"}
	for _, lstat := range []bool{false, true} {
		for _, d := range []string{dir, filepath.Join(dir, "a.csv")} {
			stat := os.Stat
			if lstat {
				stat = os.Lstat
			}
			got := make([]fs.FileInfo, len(names))
			errs := make([]error, len(names))
			StatNames(d, names, lstat, func(i int, fi fs.FileInfo, err error) { got[i], errs[i] = fi, err })
			for i, n := range names {
				want, werr := stat(filepath.Join(d, n))
				if (werr == nil) != (errs[i] == nil) {
					t.Fatalf("lstat %v %s: error %v, os gives %v", lstat, n, errs[i], werr)
				}
				if werr != nil {
					var pe, wpe *fs.PathError
					if !errors.As(errs[i], &pe) || !errors.As(werr, &wpe) || pe.Op != wpe.Op || pe.Path != wpe.Path || !errors.Is(pe.Err, wpe.Err) {
						t.Errorf("lstat %v %s: error %v, os gives %v", lstat, n, errs[i], werr)
					}
					continue
				}
				g := got[i]
				if StatOf(g) != StatOf(want) || g.Mode() != want.Mode() || g.Name() != want.Name() || g.IsDir() != want.IsDir() ||
					!g.ModTime().Equal(want.ModTime()) || SingleLink(g) != SingleLink(want) {
					t.Errorf("lstat %v %s: %v %v %v, os gives %v %v %v", lstat, n, StatOf(g), g.Mode(), SingleLink(g), StatOf(want), want.Mode(), SingleLink(want))
				}
			}
		}
	}
}
