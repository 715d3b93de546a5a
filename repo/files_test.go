package repo

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// trackedFiles, which reads folders several at once, lists what one
// filepath.WalkDir under the same rules lists: every tracked regular file
// in path order, none under .git, .chunkvc or a nested repository, no
// temporary file, no link, and not the files Git keeps for itself.
func TestTrackedFilesIsWalkDir(t *testing.T) {
	r := testRepo(t, randomData(100, 1))
	if _, err := r.Track([]string{"*.csv", ".gitignore"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{
		"a.csv", "a/b.csv", "a.b/c.csv", "a-b/z.csv", "deep/1/2/3/4/x.bin", "deep/1/y.csv", "note.txt",
		".gitignore", "sub/.gitignore", "nested/.git", "nested/in.csv", "nested/more/in.csv",
		".chunkvc/x.csv", "tmp/f.csv.chunkvc-tmp-123", "many/" + strings.Repeat("n", 40) + ".csv",
	} {
		full := filepath.Join(r.Root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 300 { // more than one stat batch in a folder
		if err := os.WriteFile(filepath.Join(r.Root, "many", strings.Repeat("m", i%7+1)+string(rune('a'+i%26))+filepath.Base(strings.Repeat("x", i/26))+".csv"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("a.csv", filepath.Join(r.Root, "link.csv")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a", filepath.Join(r.Root, "linkdir")); err != nil {
		t.Fatal(err)
	}
	var want []string
	err := filepath.WalkDir(r.Root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(r.Root, p)
		rel = filepath.ToSlash(rel)
		switch {
		case rel == ".":
		case d.IsDir() && isInternal(rel):
			return filepath.SkipDir
		case d.IsDir():
			if _, err := os.Lstat(filepath.Join(p, ".git")); err == nil {
				return filepath.SkipDir
			}
		case d.Type().IsRegular() && !strings.Contains(d.Name(), ".chunkvc-tmp-") && !gitOwned[rel] && r.Config.IsTracked(rel):
			want = append(want, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	got, err := r.trackedFiles()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) || len(want) < 300 {
		t.Fatalf("trackedFiles = %d files %q…, WalkDir %d %q…", len(got), got[:min(8, len(got))], len(want), want[:min(8, len(want))])
	}
	// statFiles answers for each in order, as os.Stat would.
	stats := r.statFiles(append(got, "gone.csv"), false)
	for i, p := range got {
		fi, err := os.Stat(r.abs(p))
		if stats[i].err != nil || err != nil || stats[i].fi.Size() != fi.Size() || !stats[i].fi.ModTime().Equal(fi.ModTime()) {
			t.Fatalf("statFiles %s: %v %v, os.Stat %v %v", p, stats[i].fi, stats[i].err, fi, err)
		}
	}
	if err := stats[len(got)].err; !os.IsNotExist(err) {
		t.Errorf("statFiles of a missing file: %v", err)
	}
}
