package main

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/chunkvc/chunkvc/formats/formattest"
	"github.com/chunkvc/chunkvc/formats/parquet/pqgen"
)

// pqBase is the GeoParquet both branches edit: 400 points in 4 row groups
// (zstd, page index, bloom filter on id, geo metadata with a covering).
var pqBase = pqgen.Config{Rows: 400, RowGroups: 4, Seed: 11}

func pqFile(t *testing.T, c pqgen.Config) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := pqgen.Write(&b, c); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// pqMergeRepo commits pqBase as pts.parquet, then theirs on branch
// "theirs" and ours on the main branch, where HEAD is left.
func pqMergeRepo(t *testing.T, ours, theirs pqgen.Config) *runner {
	formattest.RequireTool(t, "git")
	r := newRunner(t)
	r.git("init", "-q", "-b", "main")
	r.cv("init")
	r.cv("track", "*.parquet")
	r.write("pts.parquet", pqFile(t, pqBase))
	r.cv("commit", "-q", "-m", "base")
	r.git("checkout", "-q", "-b", "theirs")
	r.write("pts.parquet", pqFile(t, theirs))
	r.cv("commit", "-q", "-m", "theirs")
	r.git("checkout", "-q", "main")
	r.cv("checkout", "--force")
	r.write("pts.parquet", pqFile(t, ours))
	r.cv("commit", "-q", "-m", "ours")
	return r
}

// Two branches that edited different row groups of one GeoParquet (ours
// row group 1, theirs row group 3 with its points moved) merge with
// chunkvc merge: parquet-go reads every row of the merge as the two
// edits make it, fsck is clean and the merge commit's manifest describes
// the work file. One side editing while the other appends a row group
// merges too.
func TestMergeParquetRowGroups(t *testing.T) {
	ours, theirs := pqBase, pqBase
	ours.EditRG, ours.EditRows = 1, 7
	theirs.EditRG, theirs.EditRows, theirs.EditGeometry = 3, 5, true
	appended := pqBase
	appended.AppendRG = true
	for _, tc := range []struct {
		name   string
		theirs pqgen.Config
		want   func() []pqgen.Row
	}{
		{"edits", theirs, func() []pqgen.Row {
			return append(pqgen.Generate(ours)[:300], pqgen.Generate(theirs)[300:]...)
		}},
		{"append", appended, func() []pqgen.Row {
			return append(pqgen.Generate(ours), pqgen.Generate(appended)[400:]...)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := pqMergeRepo(t, ours, tc.theirs)
			var ok struct {
				Commit string   `json:"commit"`
				Files  []string `json:"files"`
			}
			r.jsonOf(&ok, "merge", "--json", "theirs")
			if len(ok.Commit) != 40 || strings.Join(ok.Files, " ") != "pts.parquet" {
				t.Fatalf("merge: %+v", ok)
			}
			data := r.read("pts.parquet")
			got, err := parquet.Read[pqgen.Row](bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatalf("parquet-go reads the merged file: %v", err)
			}
			if want := tc.want(); !reflect.DeepEqual(got, want) {
				t.Fatalf("merged rows: %d, want %d (or values differ)", len(got), len(want))
			}
			if st := r.cv("status"); st != "" {
				t.Fatalf("status after the merge: %q", st)
			}
			r.cv("fsck")
			if cat := r.cv("cat", "HEAD:pts.parquet"); cat != string(data) {
				t.Fatal("chunkvc cat HEAD:pts.parquet differs from the merged work file")
			}
		})
	}
}

// The same row group edited on both sides is a conflict naming the row
// group, its rows and the columns each side changed; the work file stays
// ours and git merge --abort restores everything.
func TestGitMergeParquetSameRowGroup(t *testing.T) {
	ours, theirs := pqBase, pqBase
	ours.EditRG, ours.EditRows = 2, 7
	theirs.EditRG, theirs.EditRows, theirs.EditGeometry = 2, 3, true
	r := pqMergeRepo(t, ours, theirs)
	r.cv("install")
	r.git("commit", "-q", "-m", "install", "--", ".gitattributes")
	before := r.read("pts.parquet")
	res := r.run("git", "merge", "--no-edit", "theirs")
	if res.code == 0 {
		t.Fatalf("git merge of a row group changed on both sides succeeded:\n%s%s", res.stdout, res.stderr)
	}
	text := string(r.read(".chunkvc/manifests/pts.parquet"))
	want := "conflict rg2 ["
	reason := "row group 2 (rows 200-299) changed on both sides: ours in columns value, theirs in columns bbox.xmax, bbox.xmin, bbox.ymax, bbox.ymin, geometry, value"
	if !strings.Contains(text, want) || !strings.Contains(text, reason) {
		t.Fatalf("conflict not recorded:\n%s\nstderr:\n%s", text, res.stderr)
	}
	if !bytes.Equal(r.read("pts.parquet"), before) {
		t.Fatal("a conflicted merge changed the work file")
	}
	r.git("merge", "--abort")
	if st := r.cv("status"); st != "" {
		t.Fatalf("status after git merge --abort: %q", st)
	}
}

// resolve --take settles a row group both sides changed, by its conflict
// key: rg2 from theirs, while the row group ours appended stays, and
// parquet-go reads exactly those rows.
func TestResolveParquetTakeTheirs(t *testing.T) {
	ours, theirs := pqBase, pqBase
	ours.EditRG, ours.EditRows, ours.AppendRG = 2, 7, true
	theirs.EditRG, theirs.EditRows = 2, 3 // its values only: the geo metadata stays
	r := pqMergeRepo(t, ours, theirs)
	r.cv("install")
	r.git("commit", "-q", "-m", "install", "--", ".gitattributes")
	if res := r.run("git", "merge", "--no-edit", "theirs"); res.code == 0 {
		t.Fatal("git merge of a row group changed on both sides succeeded")
	}
	if res := r.run(binary, "resolve", "pts.parquet", "--take", "theirs", "rg1"); res.code != 1 || !strings.Contains(res.stderr, "1 left") {
		t.Fatalf("resolve naming no conflicted row group: exit %d, want 1 with the conflict left\n%s", res.code, res.stderr)
	}
	r.cv("resolve", "pts.parquet", "--take", "theirs", "rg2")
	r.git("commit", "--no-edit")
	data := r.read("pts.parquet")
	got, err := parquet.Read[pqgen.Row](bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("parquet-go reads the resolved file: %v", err)
	}
	want := pqgen.Generate(ours)
	copy(want[200:300], pqgen.Generate(theirs)[200:300])
	if len(want) != 500 || !reflect.DeepEqual(got, want) {
		t.Fatalf("resolved rows: %d, want %d (or values differ)", len(got), len(want))
	}
	if st := r.cv("status"); st != "" {
		t.Fatalf("status after the resolved merge: %q", st)
	}
	r.cv("fsck")
}
