package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
)

// fgbPt is one row of the FlatGeobuf point layers the merge tests edit.
type fgbPt struct {
	id   int
	name string
	v    float64
	x, y float64
}

// fgbBase is the layer both branches edit: 400 points scattered
// deterministically over [0,1000)².
func fgbBase() []fgbPt {
	pts := make([]fgbPt, 400)
	for i := range pts {
		pts[i] = fgbPt{id: i, name: fmt.Sprintf("p%d", i), v: float64(i%37) + 0.5,
			x: float64((i*7919)%100000) / 100, y: float64((i*104729)%99991) / 100}
	}
	return pts
}

// writeFGB writes pts with ogr2ogr as an indexed FlatGeobuf (layer
// "pts", EPSG:32633) at path, through a typed CSV.
func writeFGB(t *testing.T, path string, pts []fgbPt) {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("id,name,value,x,y\n")
	for _, p := range pts {
		fmt.Fprintf(&b, "%d,%s,%g,%g,%g\n", p.id, p.name, p.v, p.x, p.y)
	}
	csv := filepath.Join(dir, "pts.csv")
	if err := os.WriteFile(csv, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pts.csvt"), []byte("Integer,String,Real,Real,Real"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(path)
	formattest.Run1(t, "ogr2ogr", "-f", "FlatGeobuf", "-lco", "SPATIAL_INDEX=YES",
		"-oo", "X_POSSIBLE_NAMES=x", "-oo", "Y_POSSIBLE_NAMES=y", "-oo", "KEEP_GEOM_COLUMNS=NO",
		"-a_srs", "EPSG:32633", "-nln", "pts", path, csv)
}

// readFGB is what GDAL reads of the FlatGeobuf at path: its rows as
// CSV lines (attributes and point), sorted, after ogrinfo has opened it
// and counted want features.
func readFGB(t *testing.T, path string, want int) []string {
	t.Helper()
	info := formattest.Run1(t, "ogrinfo", "-ro", "-so", "-al", path)
	if !strings.Contains(info, fmt.Sprintf("Feature Count: %d\n", want)) {
		t.Fatalf("ogrinfo %s: want %d features:\n%s", path, want, info)
	}
	out := formattest.Run1(t, "ogr2ogr", "-f", "CSV", "-lco", "GEOMETRY=AS_XY", "/vsistdout/", path)
	lines := strings.Split(strings.TrimSpace(out), "\n")[1:]
	sort.Strings(lines)
	return lines
}

// fgbEdits are the two branches' edits of fgbBase: each changes a
// feature, deletes one and adds one; both add point 9500 alike.
func fgbEdits() (ours, theirs, merged []fgbPt) {
	same := fgbPt{id: 9500, name: "both", v: 3, x: 500, y: 500}
	ours, theirs = fgbBase(), fgbBase()
	ours[100].name = "ours-renamed"
	ours = append(slices.Delete(ours, 200, 201), fgbPt{id: 9001, name: "ours-new", v: 1, x: -50, y: 300}, same)
	theirs[5].v, theirs[5].x = 777.5, 12.25
	theirs = append(slices.Delete(theirs, 30, 31), fgbPt{id: 9000, name: "theirs-new", v: 2, x: 1200, y: 50}, same)
	merged = slices.Clone(ours)
	merged[5] = theirs[5]
	merged = slices.Delete(merged, 30, 31)
	merged = append(merged[:len(merged)-1], theirs[len(theirs)-2], same)
	return ours, theirs, merged
}

// fgbMergeRepo commits fgbBase as pts.fgb (driver installed), theirs on
// branch "theirs" and ours on the main branch, where HEAD is left.
func fgbMergeRepo(t *testing.T, ours, theirs []fgbPt) *runner {
	formattest.RequireTool(t, "git")
	r := newRunner(t)
	r.git("init", "-q", "-b", "main")
	r.cv("init")
	r.cv("install")
	r.cv("track", "*.fgb")
	writeFGB(t, r.path("pts.fgb"), fgbBase())
	r.cv("commit", "-q", "-m", "base")
	r.git("checkout", "-q", "-b", "theirs")
	writeFGB(t, r.path("pts.fgb"), theirs)
	r.cv("commit", "-q", "-m", "theirs")
	r.git("checkout", "-q", "main")
	r.cv("checkout", "--force")
	writeFGB(t, r.path("pts.fgb"), ours)
	r.cv("commit", "-q", "-m", "ours")
	return r
}

// Two branches that edited, added and removed different features of one
// FlatGeobuf merge feature by feature, with a plain git merge (the
// driver chunkvc install registered) and with chunkvc merge: GDAL opens
// the result and reads every feature as the two edits make it, the file
// is byte for byte the one ogr2ogr writes for the merged points (Hilbert
// order, count, envelope, index), status is clean, fsck passes and the
// merge commit's manifest describes the work file.
func TestMergeFlatGeobufFeatures(t *testing.T) {
	ours, theirs, merged := fgbEdits()
	wantFile := filepath.Join(t.TempDir(), "want.fgb")
	writeFGB(t, wantFile, merged)
	want := readFGB(t, wantFile, len(merged))
	for _, how := range []string{"git merge", "chunkvc merge"} {
		t.Run(strings.ReplaceAll(how, " ", "_"), func(t *testing.T) {
			r := fgbMergeRepo(t, ours, theirs)
			if how == "git merge" {
				if res := r.run("git", "merge", "--no-edit", "theirs"); res.code != 0 {
					t.Fatalf("git merge: exit %d\n%s%s\n%s", res.code, res.stdout, res.stderr, r.read(".chunkvc/manifests/pts.fgb"))
				}
			} else {
				var ok struct {
					Commit string   `json:"commit"`
					Files  []string `json:"files"`
				}
				r.jsonOf(&ok, "merge", "theirs")
				if len(ok.Commit) != 40 || strings.Join(ok.Files, " ") != "pts.fgb" {
					t.Fatalf("merge: %+v", ok)
				}
			}
			if got := readFGB(t, r.path("pts.fgb"), len(merged)); !slices.Equal(got, want) {
				t.Fatalf("GDAL reads the merge as\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			data := r.read("pts.fgb")
			if w, _ := os.ReadFile(wantFile); !bytes.Equal(data, w) {
				t.Fatal("the merged file is not the one ogr2ogr writes for the merged points")
			}
			if st := r.cv("status"); st != "" {
				t.Fatalf("status after the merge: %q", st)
			}
			r.cv("fsck")
			if cat := r.cv("cat", "HEAD:pts.fgb"); cat != string(data) {
				t.Fatal("chunkvc cat HEAD:pts.fgb differs from the merged work file")
			}
			if m := string(r.read(".chunkvc/manifests/pts.fgb")); !strings.Contains(m, "summary index node_size=16 derived") {
				t.Fatalf("merged manifest's index is not derived:\n%s", m)
			}
		})
	}
}

// fgbConflictRepo is fgbMergeRepo with features 7 (changed on both
// sides) and 8 (changed by ours, deleted by theirs) in conflict.
func fgbConflictRepo(t *testing.T) (*runner, []fgbPt, []fgbPt) {
	ours, theirs := fgbBase(), fgbBase()
	ours[7].v, theirs[7].name = 1.25, "theirs-renamed"
	ours[8].v = 2.5
	ours[50].v = 9.5 // and one change that merges
	theirs = slices.Delete(theirs, 8, 9)
	return fgbMergeRepo(t, ours, theirs), ours, theirs
}

// The same feature changed differently on both sides is a conflict
// naming its key and bbox (changed on one side and deleted on the other
// too); the work file stays ours and git merge --abort restores
// everything.
func TestGitMergeFlatGeobufSameFeature(t *testing.T) {
	r, ours, _ := fgbConflictRepo(t)
	before := r.read("pts.fgb")
	res := r.run("git", "merge", "--no-edit", "theirs")
	if res.code == 0 {
		t.Fatalf("git merge of a feature changed on both sides succeeded:\n%s%s", res.stdout, res.stderr)
	}
	text := string(r.read(".chunkvc/manifests/pts.fgb"))
	p7 := fmt.Sprintf("%g,%g,%g,%g", ours[7].x, ours[7].y, ours[7].x, ours[7].y)
	for _, want := range []string{"conflict id=7 [" + p7 + "]: feature changed on both sides", "conflict id=8 [", "changed by ours, deleted by theirs"} {
		if !strings.Contains(text, want) {
			t.Fatalf("conflict %q not recorded:\n%s\nstderr:\n%s", want, text, res.stderr)
		}
	}
	if !bytes.Equal(r.read("pts.fgb"), before) {
		t.Fatal("a conflicted merge changed the work file")
	}
	r.git("merge", "--abort")
	if st := r.cv("status"); st != "" {
		t.Fatalf("status after git merge --abort: %q", st)
	}
}

// chunkvc resolve --take theirs KEY... settles the conflicted features
// by key after git merge stopped on them: the merge is made again with
// their version of id=7 and their deletion of id=8, our other change
// kept, and the merge commits; GDAL reads exactly that.
func TestResolveFlatGeobufTakeTheirs(t *testing.T) {
	r, ours, theirs := fgbConflictRepo(t)
	if res := r.run("git", "merge", "--no-edit", "theirs"); res.code == 0 {
		t.Fatal("git merge of conflicted features succeeded")
	}
	r.cv("resolve", "pts.fgb", "--take", "theirs", "id=7", "id=8")
	r.git("commit", "--no-edit")
	merged := slices.Clone(ours)
	merged[7] = theirs[7]
	merged = slices.Delete(merged, 8, 9)
	wantFile := filepath.Join(t.TempDir(), "want.fgb")
	writeFGB(t, wantFile, merged)
	if got, want := readFGB(t, r.path("pts.fgb"), len(merged)), readFGB(t, wantFile, len(merged)); !slices.Equal(got, want) {
		t.Fatalf("GDAL reads the resolved merge as\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if st := r.cv("status"); st != "" {
		t.Fatalf("status after the resolved merge: %q", st)
	}
	r.cv("fsck")
}
