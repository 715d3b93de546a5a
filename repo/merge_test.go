package repo

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMergeDriverWholeFiles: a generic file merges only when one side
// left it as the base (or both made the same change); both sides changing
// it is a conflict recorded above our manifest, the work file untouched.
func TestMergeDriverWholeFiles(t *testing.T) {
	r := testRepo(t, randomData(1<<18, 1))
	const name = ManifestDir + "/sub/x.bin"
	version := func(seed int64) []byte {
		t.Helper()
		if err := os.WriteFile(filepath.Join(r.Root, "sub", "x.bin"), randomData(1<<18, seed), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Commit(context.Background(), CommitOptions{Message: "v"}); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(r.Root, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	base, err := os.ReadFile(filepath.Join(r.Root, name))
	if err != nil {
		t.Fatal(err)
	}
	theirs, ours := version(2), version(3)
	work, err := os.ReadFile(filepath.Join(r.Root, "sub", "x.bin"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name             string
		base, our, their []byte
		path             string
		outcome, want    string // want: the result's text, or a piece of it
		conflict         bool
	}{
		{"identical", base, ours, ours, name, MergedOurs, string(ours), false},
		{"theirs unchanged", base, ours, base, name, MergedOurs, string(ours), false},
		{"ours unchanged", base, base, theirs, name, MergedTheirs, string(theirs), false},
		{"both changed", base, ours, theirs, name, MergedConflict, "only COG/GeoTIFF files merge tile by tile", true},
		{"no common base", nil, ours, theirs, name, MergedConflict, "only COG/GeoTIFF files merge tile by tile", true},
		{"a shard", base, ours, theirs, ".chunkvc/shards/sub/x.bin/h3", MergedConflict, "is merged whole only", true},
		{"not a manifest", []byte("a\n"), []byte("b\n"), []byte("c\n"), name, MergedConflict, "no single-file manifest", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			files := [3]string{}
			for i, b := range [][]byte{tc.base, tc.our, tc.their} {
				files[i] = filepath.Join(dir, []string{"O", "A", "B"}[i])
				if err := os.WriteFile(files[i], b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			res, err := r.MergeDriver(context.Background(), files[0], files[1], files[2], tc.path)
			if tc.conflict != errors.Is(err, ErrMergeConflict) || (!tc.conflict && err != nil) {
				t.Fatalf("err %v, want conflict %v", err, tc.conflict)
			}
			if res == nil || res.Outcome != tc.outcome {
				t.Fatalf("result %+v, want outcome %s", res, tc.outcome)
			}
			got, err := os.ReadFile(files[1])
			if err != nil {
				t.Fatal(err)
			}
			if !tc.conflict && string(got) != tc.want {
				t.Fatalf("result text:\n%s\nwant:\n%s", got, tc.want)
			}
			if tc.conflict && (!strings.HasPrefix(string(got), "<<<<<<< chunkvc merge conflict in ") ||
				!strings.Contains(string(got), tc.want) || !bytes.HasSuffix(got, tc.our)) {
				t.Fatalf("conflict text:\n%s", got)
			}
			if now, err := os.ReadFile(filepath.Join(r.Root, "sub", "x.bin")); err != nil || !bytes.Equal(now, work) {
				t.Fatal("the merge driver changed the working file")
			}
		})
	}
}
