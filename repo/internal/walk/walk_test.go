package walk

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Files, which reads folders several at once, lists what one
// filepath.WalkDir under the same rules lists, in the same order.
func TestFilesIsWalkDir(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{
		"a.csv", "a/b.csv", "a.b/c.csv", "a-b/z.csv", "deep/1/2/3/4/x.bin", "deep/1/y.csv", "skip/in.csv",
		"nested/.git", "nested/in.csv", "nested/more/in.csv", "keep.txt",
	} {
		write(t, root, p)
	}
	for i := range 600 { // more than one stat batch in a folder
		write(t, root, "many/"+strings.Repeat("m", i%7+1)+string(rune('a'+i%26))+strings.Repeat("x", i/26)+".csv")
	}
	if err := os.Symlink("a.csv", filepath.Join(root, "link.csv")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a", filepath.Join(root, "linkdir")); err != nil {
		t.Fatal(err)
	}
	rules := Rules{
		Descend: func(rel string) bool { return rel != "skip" },
		Keep:    func(rel, name string) bool { return strings.HasSuffix(name, ".csv") || strings.HasSuffix(name, ".bin") },
	}
	var want []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(strings.TrimPrefix(p, root), "/"))
		if d.IsDir() {
			if rel == "" {
				return nil
			}
			if _, err := os.Lstat(filepath.Join(p, ".git")); err == nil || !rules.Descend(rel) {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() && rules.Keep(rel, d.Name()) {
			want = append(want, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	got, err := Files(root, rules)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Files = %d %q…, WalkDir %d %q…", len(got), got[:min(8, len(got))], len(want), want[:min(8, len(want))])
	}

	// Stat answers for each path as os.Stat / os.Lstat would.
	paths := append(slices.Clone(got), "gone.csv", "link.csv", "many/gone.csv")
	for _, lstat := range []bool{false, true} {
		seen := make([]int, len(paths))
		Stat(root, paths, lstat, func(i int, fi fs.FileInfo, err error) {
			seen[i]++
			p := filepath.Join(root, filepath.FromSlash(paths[i]))
			ref, refErr := os.Stat(p)
			if lstat {
				ref, refErr = os.Lstat(p)
			}
			if (err == nil) != (refErr == nil) || (err == nil && (fi.Size() != ref.Size() || fi.Mode() != ref.Mode() || !fi.ModTime().Equal(ref.ModTime()))) {
				t.Errorf("Stat(lstat %v) %s: %v %v, os %v %v", lstat, paths[i], fi, err, ref, refErr)
			}
		})
		for i, n := range seen {
			if n != 1 {
				t.Fatalf("Stat(lstat %v) answered %s %d times", lstat, paths[i], n)
			}
		}
	}
}

// A root that is no folder holds nothing, and says why.
func TestFilesMissingRoot(t *testing.T) {
	keepAll := Rules{Descend: func(string) bool { return true }, Keep: func(string, string) bool { return true }}
	if got, err := Files(filepath.Join(t.TempDir(), "missing"), keepAll); got != nil || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing root: %q %v", got, err)
	}
}

func write(t *testing.T, root, p string) {
	t.Helper()
	full := filepath.Join(root, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(p), 0o644); err != nil {
		t.Fatal(err)
	}
}
