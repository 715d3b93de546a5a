package parquet

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/formats/formattest"
	"github.com/chunkvc/chunkvc/formats/parquet/pqgen"
)

// small is a 3-row-group GeoParquet file from pqgen.
var small = sync.OnceValue(func() []byte {
	var b bytes.Buffer
	if err := pqgen.Write(&b, pqgen.Config{Rows: 3000, RowGroups: 3, Seed: 7}); err != nil {
		panic(err)
	}
	return b.Bytes()
})

// oom21 is the 21-byte file from FORMATS.md §2.5 whose footer claims a
// list of 2^31-ish row groups: parquet-go dies allocating 200 GB on it.
func oom21() []byte {
	footer := []byte{0x15, 0x04, 0x19, 0xFC, 0xFF, 0xFF, 0xFF, 0xFF, 0x07}
	b := append([]byte("PAR1"), footer...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(footer)))
	return append(b, "PAR1"...)
}

func TestOOMFooterRefusedCheaply(t *testing.T) {
	data := oom21()
	if len(data) != 21 {
		t.Fatalf("test file is %d bytes", len(data))
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, err := formattest.Layout(Adapter{}, data)
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("accepted the 21-byte OOM file")
	}
	if !strings.Contains(err.Error(), "footer is not valid Thrift") {
		t.Errorf("reason %q does not name the footer", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 64<<10 {
		t.Errorf("allocated %d bytes refusing a 21-byte file", n)
	}
	if took > time.Second {
		t.Errorf("took %v", took)
	}
}

// rewrite re-encodes the footer of data after edit changes it.
func rewrite(t *testing.T, data []byte, edit func(*format.FileMetaData)) []byte {
	t.Helper()
	n := int(binary.LittleEndian.Uint32(data[len(data)-8:]))
	foot := data[len(data)-8-n : len(data)-8]
	var md format.FileMetaData
	if err := thrift.Unmarshal(new(thrift.CompactProtocol), foot, &md); err != nil {
		t.Fatal(err)
	}
	edit(&md)
	nb, err := thrift.Marshal(new(thrift.CompactProtocol), &md)
	if err != nil {
		t.Fatal(err)
	}
	out := append([]byte(nil), data[:len(data)-8-n]...)
	out = append(out, nb...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(nb)))
	return append(out, "PAR1"...)
}

func TestRefusals(t *testing.T) {
	base := small()
	tail := func(b []byte, magic string, flen uint32) []byte {
		b = append([]byte(nil), b...)
		binary.LittleEndian.PutUint32(b[len(b)-8:], flen)
		copy(b[len(b)-4:], magic)
		return b
	}
	flen := binary.LittleEndian.Uint32(base[len(base)-8:])
	cc := func(md *format.FileMetaData, rg, col int) *format.ColumnChunk { return &md.RowGroups[rg].Columns[col] }
	for _, tc := range []struct {
		name, want string
		data       []byte
	}{
		{"encrypted footer", "encrypted footer (PARE)", tail(base, "PARE", flen)},
		{"no end magic", "no PAR1 magic at the end", tail(base, "PAR0", flen)},
		{"footer too long", "does not fit", tail(base, "PAR1", uint32(len(base)-11))},
		{"too small", "too small", []byte("PAR1PAR1")},
		{"file_path", "file_path", rewrite(t, base, func(md *format.FileMetaData) { cc(md, 1, 2).FilePath = "other.parquet" })},
		{"overlap", "overlaps", rewrite(t, base, func(md *format.FileMetaData) {
			cc(md, 0, 3).MetaData.DataPageOffset = cc(md, 0, 2).MetaData.DataPageOffset + 1
		})},
		{"past the data", "outside the data area", rewrite(t, base, func(md *format.FileMetaData) {
			cc(md, 2, 0).MetaData.TotalCompressedSize = 1 << 40
		})},
		{"negative size", "outside the data area", rewrite(t, base, func(md *format.FileMetaData) {
			cc(md, 2, 0).MetaData.TotalCompressedSize = -5
		})},
		{"offset index in the footer", "outside the data area", rewrite(t, base, func(md *format.FileMetaData) {
			cc(md, 2, 0).OffsetIndexOffset = int64(len(base))
		})},
		{"encrypted column", "encrypted", rewrite(t, base, func(md *format.FileMetaData) {
			cc(md, 0, 0).EncryptedColumnMetadata = []byte{1}
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := formattest.Layout(Adapter{}, tc.data)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			formattest.Fuzz(t, Adapter{}, tc.data)
		})
	}
}

func TestValidateLimits(t *testing.T) {
	deep := bytes.Repeat([]byte{0x1c}, maxDepth+2) // field 1, struct, nested
	for _, tc := range []struct {
		name string
		b    []byte
		ok   bool
	}{
		{"empty struct", []byte{0}, true},
		{"deep", append(deep, bytes.Repeat([]byte{0}, maxDepth+3)...), false},
		{"truncated", []byte{0x15}, false},
		{"list longer than input", []byte{0x19, 0xfc, 0xff, 0xff, 0xff, 0x07, 0}, false},
		{"empty list of type 0 (fastparquet)", []byte{0x19, 0x00, 0}, true},
		{"list of type 0", []byte{0x19, 0x10, 0x00, 0}, false},
		{"string longer than input", []byte{0x18, 0x7f, 0}, false},
		{"map longer than input", []byte{0x1b, 0x10, 0x55, 0}, false},
		{"bad type", []byte{0x1d}, false},
		{"long varint", append([]byte{0x16}, bytes.Repeat([]byte{0xff}, 11)...), false},
	} {
		_, err := validate(tc.b)
		if (err == nil) != tc.ok {
			t.Errorf("%s: err = %v", tc.name, err)
		}
	}
}

// TestWholeChunkWhenPagesDoNotTile: a total_compressed_size one byte short
// makes the page walk miss; the column chunk becomes one chunk and the
// byte it leaves out becomes inline gap.
func TestWholeChunkWhenPagesDoNotTile(t *testing.T) {
	data := rewrite(t, small(), func(md *format.FileMetaData) {
		md.RowGroups[1].Columns[2].MetaData.TotalCompressedSize--
	})
	l, err := formattest.Layout(Adapter{}, data)
	if err != nil {
		t.Fatal(err)
	}
	if err := formats.Check(l, int64(len(data))); err != nil {
		t.Fatal(err)
	}
	var whole, pages int
	for _, s := range l.Chunks() {
		switch {
		case s.Key == "rg1/value":
			whole++
		case strings.HasPrefix(s.Key, "rg1/value/p"):
			pages++
		}
	}
	if whole != 1 || pages != 0 {
		t.Fatalf("rg1/value: %d whole chunks, %d pages", whole, pages)
	}
}

// TestBigUnwalkableChunkIsSplit: a column chunk over SplitMin whose pages
// cannot be walked is cut by content under its own key.
func TestBigUnwalkableChunkIsSplit(t *testing.T) {
	n := int64(SplitMin + 1<<20)
	budget := int64(100)
	segs, err := pages(context.Background(), bytes.NewReader(make([]byte, n)), span{off: 0, n: n, key: "rg0/x"}, &budget)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, s := range segs {
		if s.Key != "rg0/x@" || s.Len > formats.MaxChunk {
			t.Fatalf("segment %+v", s)
		}
		sum += s.Len
	}
	if sum != n || len(segs) < 2 {
		t.Fatalf("%d segments covering %d of %d bytes", len(segs), sum, n)
	}
}

func TestKeys(t *testing.T) {
	k := newKeyer()
	p := func(s ...string) [][]byte {
		var out [][]byte
		for _, x := range s {
			out = append(out, []byte(x))
		}
		return out
	}
	long := strings.Repeat("x", 200)
	cases := [][][]byte{
		p("a", "b"), p("a.b"), p("a", "b", "ci"), p("a/b"), p("a b"), p("a@"), p("a%2E"), p("naïve"),
		p(long + "1"), p(long + "2"), p(long), p("a\x00b"), p("a", "b\x00"), p("~"), p(""), p("", ""),
	}
	seen := map[string]int{}
	for i, c := range cases {
		s := k.path(c)
		if j, dup := seen[s]; dup {
			t.Errorf("paths %q and %q both spell %q", cases[j], c, s)
		}
		seen[s] = i
		key := fmt.Sprintf("rg%d/%s/p%d@", 1<<31, s, 1<<31)
		if err := formats.CheckKey(key); err != nil {
			t.Errorf("%q: %v", c, err)
		}
		if strings.ContainsAny(s, "/@ ") {
			t.Errorf("%q spells %q", c, s)
		}
	}
	if got := k.path(p("a", "b")); got != "a.b" {
		t.Errorf("plain path spelled %q", got)
	}
	if got := k.path(p("bbox", "xmin")); got != "bbox.xmin" {
		t.Errorf("plain path spelled %q", got)
	}
}

func TestSummary(t *testing.T) {
	l, err := formattest.Layout(Adapter{}, small())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range l.Summary {
		names = append(names, f.Name)
		if strings.ContainsAny(f.Value, "\n\r\t") || f.Value == "" {
			t.Errorf("summary %s=%q", f.Name, f.Value)
		}
	}
	want := "rows row_groups columns schema compression created_by geo crs geometry_types bbox"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("summary fields %q, want %q", got, want)
	}
	for name, v := range map[string]string{"rows": "3000", "row_groups": "3", "columns": "8",
		"compression": "ZSTD", "crs": "OGC:CRS84", "geometry_types": "Point"} {
		if got := summaryValue(l, name); got != v {
			t.Errorf("summary %s = %q, want %q", name, got, v)
		}
	}
}

// TestPageBudget: forged tiny pages stop being page chunks once the file's
// page budget is spent.
func TestPageBudget(t *testing.T) {
	page := []byte{0x35, 0x00, 0x00} // PageHeader{compressed_page_size: 0}
	data := bytes.Repeat(page, 100)
	s := span{off: 0, n: int64(len(data)), key: "rg0/x"}
	for _, tc := range []struct {
		budget, segs, left int64
	}{{1000, 100, 900}, {100, 100, 0}, {99, 1, 99}} {
		b := tc.budget
		segs, err := pages(context.Background(), bytes.NewReader(data), s, &b)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(segs)) != tc.segs || b != tc.left {
			t.Errorf("budget %d: %d segments, %d left; want %d, %d", tc.budget, len(segs), b, tc.segs, tc.left)
		}
	}
}

// TestItemBudget: a footer of a million empty row groups (one byte each)
// is refused instead of decoded into a million structs, and so is one of
// 200 000 empty column chunks.
func TestItemBudget(t *testing.T) {
	rgs := []byte{0x49, 0xfc} // field 4 row_groups: list<struct>, long form
	rgs = binary.AppendUvarint(rgs, maxItems+1)
	rgs = append(rgs, make([]byte, maxItems+2)...) // empty structs + stop
	cols := []byte{0x49, 0x1c, 0x19, 0xfc}         // one row group, field 1 columns
	cols = binary.AppendUvarint(cols, 200000)
	cols = append(cols, make([]byte, 200000+2)...)
	for _, foot := range [][]byte{rgs, cols} {
		data := append([]byte("PAR1"), foot...)
		data = binary.LittleEndian.AppendUint32(data, uint32(len(foot)))
		data = append(data, "PAR1"...)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := formattest.Layout(Adapter{}, data)
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), "too many") {
			t.Fatalf("error %v", err)
		}
		if a := after.TotalAlloc - before.TotalAlloc; a > 32*uint64(len(data)) {
			t.Errorf("allocated %d bytes for a %d-byte file", a, len(data))
		}
	}
}
