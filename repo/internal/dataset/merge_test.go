package dataset

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
	"github.com/chunkvc/chunkvc/hashing"
)

// zarrEdits makes the stores of the merge tests with zarr-python: base,
// and the edits applied in the order named to a copy of it.
const zarrEdits = `import sys, numpy as np, zarr
path = sys.argv[1]
for step in sys.argv[2:]:
    if step == "base":
        a = zarr.open(path, mode="w", shape=(4, 8, 8), chunks=(1, 4, 4), dtype="f4", fill_value=0)
        a[:] = np.arange(256, dtype="f4").reshape(4, 8, 8)
        a.attrs["units"] = "K"
        continue
    a = zarr.open(path, mode="r+")
    if step == "corner":
        a[0, 0:4, 0:4] = 1
    elif step == "corner2":
        a[0, 0:4, 0:4] = 7
    elif step == "far":
        a[3, 4:8, 4:8] = 2
    elif step == "append":
        a.append(np.full((1, 8, 8), 5, dtype="f4"), axis=0)
    elif step == "append9":
        a.append(np.full((1, 8, 8), 9, dtype="f4"), axis=0)
    elif step == "attrs":
        a.attrs["units"] = "degC"
    elif step == "recode":
        zarr.open(path, mode="w", shape=(4, 8, 8), chunks=(2, 4, 4), dtype="f4", fill_value=0)[:] = np.arange(256, dtype="f4").reshape(4, 8, 8)
`

// mergeStores makes base, ours (base + oursSteps) and theirs (base +
// theirsSteps), merges them into a copy of ours, and returns the
// conflicts and the merged directory.
func mergeStores(t *testing.T, oursSteps, theirsSteps []string, pick func(string) Pick) ([]Conflict, string) {
	t.Helper()
	dir := t.TempDir()
	make := func(name string, steps ...string) (string, committed) {
		p := filepath.Join(dir, name)
		args := append([]string{"-c", zarrEdits, p}, steps...)
		if out, err := exec.Command(python, args...).CombinedOutput(); err != nil {
			t.Fatalf("python %v: %v\n%s", steps, err, out)
		}
		_, c := commit(t, p)
		return p, c
	}
	_, base := make("base", "base")
	oursDir, ours := make("ours", append([]string{"base"}, oursSteps...)...)
	_, theirs := make("theirs", append([]string{"base"}, theirsSteps...)...)
	fetch := func(id hashing.ID) ([]byte, error) {
		if b, ok := ours.store[id]; ok {
			return b, nil
		}
		return theirs.fetch(id)
	}
	work := filepath.Join(dir, "work")
	copyTree(t, oursDir, work)
	cs, _, err := Merge(work, base.version(), ours.version(), theirs.version(), fetch, pick)
	if err != nil {
		t.Fatalf("merge: %v", err)
	}
	if len(cs) > 0 {
		sameTree(t, oursDir, work) // untouched
	}
	return cs, work
}

// expected is the store zarr-python makes when one writer applies steps
// to base in turn: what a merge of the sides must be.
func expected(t *testing.T, steps ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "want")
	args := append([]string{"-c", zarrEdits, p, "base"}, steps...)
	if out, err := exec.Command(python, args...).CombinedOutput(); err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	return p
}

func TestMergeStores(t *testing.T) {
	formattest.RequirePython(t, "zarr", "numcodecs")
	for _, tc := range []struct {
		name          string
		ours, theirs  []string
		want          []string // the merged store, as one writer makes it
		conflictsWith string   // else the conflict's path holds this
		pick          Pick     // for every conflict
	}{
		{name: "chunks apart", ours: []string{"corner"}, theirs: []string{"far"}, want: []string{"corner", "far"}},
		{name: "append and edit", ours: []string{"corner"}, theirs: []string{"append"}, want: []string{"corner", "append"}},
		{name: "attributes and edit", ours: []string{"attrs"}, theirs: []string{"far"}, want: []string{"attrs", "far"}},
		{name: "same edit", ours: []string{"corner"}, theirs: []string{"corner"}, want: []string{"corner"}},
		{name: "same chunk", ours: []string{"corner"}, theirs: []string{"corner2"}, conflictsWith: "0.0.0"},
		{name: "same chunk, theirs picked", ours: []string{"corner", "far"}, theirs: []string{"corner2"}, pick: PickTheirs, want: []string{"corner2", "far"}},
		{name: "same chunk, ours picked", ours: []string{"corner"}, theirs: []string{"corner2", "far"}, pick: PickOurs, want: []string{"corner", "far"}},
		{name: "recoded", ours: []string{"corner"}, theirs: []string{"recode"}, conflictsWith: ".zarray"},
		{name: "two appends", ours: []string{"append"}, theirs: []string{"far", "append9"}, conflictsWith: "4.0.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, work := mergeStores(t, tc.ours, tc.theirs, func(string) Pick { return tc.pick })
			if tc.conflictsWith != "" {
				found := false
				for _, c := range cs {
					found = found || strings.HasSuffix(c.Path, tc.conflictsWith)
				}
				if !found {
					t.Fatalf("conflicts %v, want one on %s", cs, tc.conflictsWith)
				}
				return
			}
			if len(cs) > 0 {
				t.Fatalf("conflicts: %v", cs)
			}
			sameTree(t, expected(t, tc.want...), work)
		})
	}
}
