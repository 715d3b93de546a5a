package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// chunkvc resolve --ours|--theirs settles a COG both sides changed in the
// same tile with that side's whole file: its bytes in the work tree, its
// manifest committed by git commit, fsck clean.
func TestResolveWholeFile(t *testing.T) {
	for _, side := range []string{"--ours", "--theirs"} {
		t.Run(side, func(t *testing.T) {
			r, _ := mergeRepo(t, editTopLeftToo)
			theirs := []byte(r.cv("cat", "theirs:dem.tif"))
			cog(t, "edit", r.path("dem.tif"), editTopLeft)
			r.cv("commit", "-q", "-m", "ours")
			ours := r.read("dem.tif")
			if res := r.run("git", "merge", "--no-edit", "theirs"); res.code == 0 {
				t.Fatal("git merge of the same tile went through")
			}
			r.cv("resolve", "dem.tif", side)
			want := map[string][]byte{"--ours": ours, "--theirs": theirs}[side]
			if !bytes.Equal(r.read("dem.tif"), want) {
				t.Fatalf("dem.tif after resolve %s is not that side's file", side)
			}
			r.git("commit", "-q", "--no-edit")
			if !bytes.Equal([]byte(r.cv("cat", "HEAD:dem.tif")), want) {
				t.Fatal("the merge commit does not hold the side taken")
			}
			if st := r.cv("status"); strings.Contains(st, "dem.tif") {
				t.Fatalf("status after the resolve:\n%s", st)
			}
			r.cv("fsck")
		})
	}
}

// chunkvc resolve --take theirs KEY... settles the conflicted tiles of a
// split COG for their side and merges the rest (their other window): the
// result is the base with their two windows, GDAL-checked, once
// chunkvc merge --continue has committed it. Without every key named,
// the conflicts left are listed (exit 1).
func TestResolveTakeKeys(t *testing.T) {
	r := splitMergeRepo(t, editTopLeft, editTopLeftToo+" "+editBottomRight)
	res := r.run(binary, "merge", "--json", "theirs")
	var stopped struct {
		Resolved []struct {
			Conflicts []struct{ Key string } `json:"conflicts"`
		} `json:"resolved"`
	}
	if res.code != exitFailure || json.Unmarshal([]byte(res.stdout), &stopped) != nil || len(stopped.Resolved) != 1 || len(stopped.Resolved[0].Conflicts) < 2 {
		t.Fatalf("merge of the same tile: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	var keys []string
	for _, c := range stopped.Resolved[0].Conflicts {
		keys = append(keys, c.Key)
	}
	if part := r.run(binary, "resolve", "dem.tif", "--take", "theirs", keys[0]); part.code != exitFailure || !strings.Contains(part.stdout, keys[1]) {
		t.Fatalf("resolve of one key of %v: exit %d\n%s%s", keys, part.code, part.stdout, part.stderr)
	}
	r.cv(append([]string{"resolve", "dem.tif", "--take", "theirs"}, keys...)...)
	r.cv("merge", "--continue")
	checkMerged(t, r, editTopLeftToo, editBottomRight)
}
