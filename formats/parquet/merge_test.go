package parquet

import (
	"bytes"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/chunkvc/chunkvc/formats/formattest"
	"github.com/chunkvc/chunkvc/formats/parquet/pqgen"
	"github.com/chunkvc/chunkvc/hashing"
)

// chunkIDs are a file's chunks by key, as the adapter cuts them.
func chunkIDs(t *testing.T, data []byte) map[string]hashing.ID {
	t.Helper()
	l, err := formattest.Layout(Adapter{}, data)
	if err != nil {
		t.Fatalf("layout: %v", err)
	}
	out := map[string]hashing.ID{}
	for _, s := range l.Chunks() {
		out[s.Key] = hashing.Sum(data[s.Off : s.Off+s.Len])
	}
	return out
}

func side(b []byte) MergeSide { return MergeSide{R: bytes.NewReader(b), Size: int64(len(b))} }

// mergeCase merges ours and theirs (against base) taking theirs' row
// groups in take, and checks the merged file against a real reader: all
// rows, each row group's offset and column indexes, bloom filters; and
// against the adapter: exactly ours' chunks with theirs' row groups in
// take.
func mergeCase(t *testing.T, base, ours, theirs pqgen.Config, take []bool) []byte {
	t.Helper()
	files := [3][]byte{genFile(t, base), genFile(t, ours), genFile(t, theirs)}
	var out bytes.Buffer
	n, err := MergeRowGroups(&out, side(files[0]), side(files[1]), side(files[2]), take)
	if err != nil {
		t.Fatalf("merge: %v", err)
	}
	merged := out.Bytes()
	if n != int64(len(merged)) {
		t.Fatalf("merge reports %d bytes, wrote %d", n, len(merged))
	}
	per := base.PerGroup()
	or, tr := pqgen.Generate(ours), pqgen.Generate(theirs)
	var want []pqgen.Row
	for i, th := range take {
		src := or
		if th {
			src = tr
		}
		want = append(want, src[i*per:min((i+1)*per, len(src))]...)
	}
	got, err := parquet.Read[pqgen.Row](bytes.NewReader(merged), int64(len(merged)))
	if err != nil {
		t.Fatalf("parquet-go reads the merged file: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("merged rows differ: %d rows, want %d", len(got), len(want))
	}
	checkIndexes(t, merged, files[1], files[2], take)
	wantIDs, ids := map[string]hashing.ID{}, [2]map[string]hashing.ID{chunkIDs(t, files[1]), chunkIDs(t, files[2])}
	for i, th := range take {
		for k, id := range ids[b2i(th)] {
			if strings.HasPrefix(k, "rg"+strconv.Itoa(i)+"/") {
				wantIDs[k] = id
			}
		}
	}
	if gotIDs := chunkIDs(t, merged); !reflect.DeepEqual(gotIDs, wantIDs) {
		t.Fatalf("merged chunks: %d keys, want %d", len(gotIDs), len(wantIDs))
	}
	return merged
}

// checkIndexes holds the merged file's page indexes and bloom filters,
// read by parquet-go, to the source row groups': the same pages at
// offsets moved with their row group, the same column index bounds, and
// the id bloom filter holding the row group's ids.
func checkIndexes(t *testing.T, merged, ours, theirs []byte, take []bool) {
	t.Helper()
	open := func(b []byte) *parquet.File {
		f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		return f
	}
	mf, srcs := open(merged), [2]*parquet.File{open(ours), open(theirs)}
	if len(mf.RowGroups()) != len(take) {
		t.Fatalf("%d row groups, want %d", len(mf.RowGroups()), len(take))
	}
	for i, th := range take {
		mcs, scs := mf.RowGroups()[i].ColumnChunks(), srcs[b2i(th)].RowGroups()[i].ColumnChunks()
		for j := range mcs {
			mo, err1 := mcs[j].OffsetIndex()
			so, err2 := scs[j].OffsetIndex()
			if err1 != nil || err2 != nil || mo.NumPages() != so.NumPages() || mo.NumPages() == 0 {
				t.Fatalf("rg %d col %d offset index: %v %v", i, j, err1, err2)
			}
			d := mo.Offset(0) - so.Offset(0)
			for p := range mo.NumPages() {
				if mo.Offset(p)-so.Offset(p) != d || mo.CompressedPageSize(p) != so.CompressedPageSize(p) || mo.FirstRowIndex(p) != so.FirstRowIndex(p) {
					t.Fatalf("rg %d col %d page %d: offset index not moved with the row group", i, j, p)
				}
				hdr, size, err := pageHeader(merged[mo.Offset(p):])
				if err != nil || int64(hdr)+int64(size) != mo.CompressedPageSize(p) {
					t.Fatalf("rg %d col %d page %d: no page at the offset index's offset (%v)", i, j, p, err)
				}
			}
			mc, err1 := mcs[j].ColumnIndex()
			sc, err2 := scs[j].ColumnIndex()
			if err1 != nil || err2 != nil || mc.NumPages() != sc.NumPages() || !bytes.Equal(mc.MinValue(0).Bytes(), sc.MinValue(0).Bytes()) {
				t.Fatalf("rg %d col %d column index differs: %v %v", i, j, err1, err2)
			}
		}
		bf := mcs[0].BloomFilter()
		if bf == nil {
			t.Fatalf("rg %d: no bloom filter on id", i)
		}
		first := int64(i) * srcs[0].RowGroups()[0].NumRows()
		if ok, err := bf.Check(parquet.ValueOf(first)); err != nil || !ok {
			t.Fatalf("rg %d: bloom filter misses id %d (%v)", i, first, err)
		}
	}
}

// One side edited row group 1, the other row group 3 (points moved, so
// its geo metadata changed too): the merge has both edits and their geo.
func TestMergeRowGroupsEdits(t *testing.T) {
	base := pqgen.Config{Rows: 400, RowGroups: 4, Seed: 3}
	ours, theirs := base, base
	ours.EditRG, ours.EditRows = 1, 7
	theirs.EditRG, theirs.EditRows, theirs.EditGeometry = 3, 5, true
	merged := mergeCase(t, base, ours, theirs, []bool{false, false, false, true})
	mm, _, err := openFooter(bytes.NewReader(merged), int64(len(merged)))
	if err != nil {
		t.Fatal(err)
	}
	tf := genFile(t, theirs)
	tm, _, _ := openFooter(bytes.NewReader(tf), int64(len(tf)))
	if !bytes.Equal(mm.geo, tm.geo) || mm.numRows != 400 {
		t.Fatalf("geo or num_rows not theirs: %d rows", mm.numRows)
	}
}

// One side edited, the other appended a row group.
func TestMergeRowGroupsAppend(t *testing.T) {
	base := pqgen.Config{Rows: 300, RowGroups: 3, Seed: 5}
	ours, theirs := base, base
	ours.EditRG, ours.EditRows = 0, 3
	theirs.AppendRG = true
	mergeCase(t, base, ours, theirs, []bool{false, false, false, true})
}

// Sides whose schemas or file metadata both changed do not merge.
func TestMergeRowGroupsRefused(t *testing.T) {
	base := pqgen.Config{Rows: 300, RowGroups: 3, Seed: 5}
	ours, theirs := base, base
	ours.EditRG, ours.EditRows, ours.EditGeometry = 0, 3, true
	theirs.AppendRG = true
	f := [3][]byte{genFile(t, base), genFile(t, ours), genFile(t, theirs)}
	_, err := MergeRowGroups(&bytes.Buffer{}, side(f[0]), side(f[1]), side(f[2]), []bool{false, false, false, true})
	if err == nil || !strings.Contains(err.Error(), "changed on both sides") {
		t.Fatalf("geo changed on both sides: %v", err)
	}
	plain := theirs
	plain.NoCovering = true
	f[2] = genFile(t, plain)
	_, err = MergeRowGroups(&bytes.Buffer{}, side(f[0]), side(f[1]), side(f[2]), []bool{false, false, false, true})
	if err == nil || !strings.Contains(err.Error(), "schema") {
		t.Fatalf("schema change: %v", err)
	}
}
