package parquet

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/formats/formattest"
	"github.com/chunkvc/chunkvc/formats/parquet/pqgen"
	"github.com/chunkvc/chunkvc/hashing"
)

// Issue 4's file: 200k points in 20 row groups, zstd, geo metadata, bbox
// covering. Generated once per test binary (about a second).
var points = pqgen.Config{Rows: 200000, RowGroups: 20, Seed: 42}

var gen = struct {
	sync.Mutex
	m map[pqgen.Config][]byte
}{m: map[pqgen.Config][]byte{}}

func generate(t testing.TB, c pqgen.Config) []byte {
	t.Helper()
	gen.Lock()
	defer gen.Unlock()
	if b, ok := gen.m[c]; ok {
		return b
	}
	var b bytes.Buffer
	if err := pqgen.Write(&b, c); err != nil {
		t.Fatal(err)
	}
	gen.m[c] = b.Bytes()
	return b.Bytes()
}

func layout(t testing.TB, data []byte) *formats.Layout {
	t.Helper()
	l, err := formattest.Layout(Adapter{}, data)
	if err != nil {
		t.Fatal(err)
	}
	if err := formats.Check(l, int64(len(data))); err != nil {
		t.Fatal(err)
	}
	return l
}

// hashes maps chunk key to content hash.
func hashes(t testing.TB, l *formats.Layout, data []byte) map[string]hashing.ID {
	t.Helper()
	m := map[string]hashing.ID{}
	for _, s := range l.Chunks() {
		if _, dup := m[s.Key]; dup && !strings.HasSuffix(s.Key, "@") {
			t.Fatalf("key %s used twice", s.Key)
		}
		m[s.Key] = hashing.Sum(data[s.Off : s.Off+s.Len])
	}
	return m
}

func TestEditValueColumn(t *testing.T) {
	const rg = 7
	before := generate(t, points)
	edit := points
	edit.EditRows, edit.EditRG = 100, rg
	after := generate(t, edit)

	lb, la := layout(t, before), layout(t, after)
	var column int64 // bytes of rg7's value column chunk in after
	for _, s := range la.Chunks() {
		if strings.HasPrefix(s.Key, "rg7/value/p") {
			column += s.Len
		}
	}
	if column == 0 {
		t.Fatal("no rg7/value pages")
	}
	changed := formattest.ChangedBytes(t, Adapter{}, before, after)
	limit := (column + la.InlineBytes()) * 3 / 2
	t.Logf("chunks %d, changed %d bytes; value column chunk %d + inline %d (limit %d); file %d bytes",
		len(la.Chunks()), changed, column, la.InlineBytes(), limit, len(after))
	if changed > limit {
		t.Errorf("edit of 100 values stores %d bytes, over 1.5 × (%d + %d)", changed, column, la.InlineBytes())
	}
	if n := len(la.Chunks()); n < 100 {
		t.Errorf("only %d chunks", n)
	}
	hb, ha := hashes(t, lb, before), hashes(t, la, after)
	if len(hb) != len(ha) {
		t.Errorf("%d keys before, %d after", len(hb), len(ha))
	}
	for k, id := range ha {
		if hb[k] != id && !strings.HasPrefix(k, "rg7/value/") {
			t.Errorf("chunk %s changed", k)
		}
	}
}

func TestFootprints(t *testing.T) {
	data := generate(t, points)
	l := layout(t, data)
	want := pqgen.RowGroupBBoxes(pqgen.Generate(points), points.PerGroup())
	if len(want) != points.RowGroups {
		t.Fatalf("%d row groups generated", len(want))
	}
	for _, s := range l.Chunks() {
		var rg int
		if _, err := fmt.Sscanf(s.Key, "rg%d/", &rg); err != nil || rg >= len(want) {
			t.Fatalf("chunk %s is not in a row group", s.Key)
		}
		if s.BBox == nil || *s.BBox != want[rg] {
			t.Errorf("chunk %s: bbox %v, row group %d has %v", s.Key, s.BBox, rg, want[rg])
		}
	}
}

func TestAppendRowGroup(t *testing.T) {
	before := generate(t, points)
	app := points
	app.AppendRG = true
	after := generate(t, app)
	lb, la := layout(t, before), layout(t, after)
	hb, ha := hashes(t, lb, before), hashes(t, la, after)
	for k, id := range hb {
		if ha[k] != id {
			t.Errorf("old chunk %s changed or vanished", k)
		}
	}
	var added int64
	for _, s := range la.Chunks() {
		if hb[s.Key] != ha[s.Key] {
			if !strings.HasPrefix(s.Key, "rg20/") {
				t.Errorf("chunk %s changed", s.Key)
			}
			added += s.Len
		}
	}
	changed := formattest.ChangedBytes(t, Adapter{}, before, after)
	t.Logf("append: new row group %d bytes + inline %d = %d; ChangedBytes %d", added, la.InlineBytes(), added+la.InlineBytes(), changed)
	if changed > added+la.InlineBytes() {
		t.Errorf("append stores %d bytes, more than new row group %d + inline %d", changed, added, la.InlineBytes())
	}
}

func TestDeterministicGenerator(t *testing.T) {
	c := pqgen.Config{Rows: 5000, RowGroups: 2, Seed: 3}
	var a, b bytes.Buffer
	if err := pqgen.Write(&a, c); err != nil {
		t.Fatal(err)
	}
	if err := pqgen.Write(&b, c); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two runs of the generator differ")
	}
}
