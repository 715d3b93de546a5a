package parquet

import (
	"encoding/binary"
	"testing"

	"github.com/parquet-go/parquet-go/format"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/formats/formattest"
	"github.com/chunkvc/chunkvc/formats/parquet/pqgen"
	"github.com/chunkvc/chunkvc/geom"
)

// emptyListsTypeZero returns a copy of footer (a FileMetaData) with the
// header of every empty list rewritten to element type 0, as fastparquet
// writes them, and how many it rewrote.
func emptyListsTypeZero(footer []byte) ([]byte, int) {
	out := append([]byte(nil), footer...)
	r := &treader{b: out}
	n := 0
	var walk func(typ byte)
	walk = func(typ byte) {
		switch typ {
		case tList, tSet:
			at := r.pos
			elem, k := r.list()
			if k == 0 && out[at] < 0xf0 {
				out[at] = 0
				n++
			}
			for i := 0; i < k && r.err == nil; i++ {
				walk(elem)
			}
		case tStruct:
			var last int16
			for r.err == nil {
				t, _ := r.field(&last)
				if t == tStop {
					return
				}
				if t != tTrue && t != tFalse {
					walk(t)
				}
			}
		default:
			r.skip(typ)
		}
	}
	walk(tStruct)
	return out, n
}

// withFooter returns data with its footer replaced by footer.
func withFooter(data, footer []byte) []byte {
	n := int(binary.LittleEndian.Uint32(data[len(data)-8:]))
	out := append([]byte(nil), data[:len(data)-8-n]...)
	out = append(out, footer...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(footer)))
	return append(out, "PAR1"...)
}

func footerOf(data []byte) []byte {
	n := int(binary.LittleEndian.Uint32(data[len(data)-8:]))
	return data[len(data)-8-n : len(data)-8]
}

// fastparquet writes empty Thrift lists with element type 0, which the
// compact protocol has no name for; parquet-go, Arrow and arrow-rs read
// them. So must the adapter: the same chunks as the original footer's.
func TestQuirkEmptyListTypeZero(t *testing.T) {
	base := small()
	foot, n := emptyListsTypeZero(footerOf(base))
	if n == 0 {
		t.Fatal("the footer has no empty list to rewrite")
	}
	data := withFooter(base, foot)
	if _, err := openPQ(data); err != nil {
		t.Fatalf("parquet-go refuses the rewritten footer: %v", err)
	}
	want, err := formattest.Layout(Adapter{}, base)
	if err != nil {
		t.Fatal(err)
	}
	got, err := formattest.Layout(Adapter{}, data)
	if err != nil {
		t.Fatalf("%d empty lists of type 0: %v", n, err)
	}
	sameChunks(t, want, got)
	formattest.Run(t, Adapter{}, []formattest.File{{Name: "empty-lists-type-0", Data: data}}, map[string]bool{"empty-lists-type-0": true})
}

// sameChunks checks that two layouts of the same data area have the same
// keyed chunks, with the same footprints.
func sameChunks(t *testing.T, want, got *formats.Layout) {
	t.Helper()
	w, g := want.Chunks(), got.Chunks()
	if len(w) != len(g) {
		t.Fatalf("%d chunks, want %d", len(g), len(w))
	}
	for i := range w {
		if w[i].Key != g[i].Key || w[i].Off != g[i].Off || w[i].Len != g[i].Len || !sameBBox(w[i].BBox, g[i].BBox) {
			t.Fatalf("chunk %d is %s %d+%d %v, want %s %d+%d %v", i, g[i].Key, g[i].Off, g[i].Len, g[i].BBox, w[i].Key, w[i].Off, w[i].Len, w[i].BBox)
		}
	}
}

func sameBBox(a, b *geom.BBox) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

// Some writers set ColumnChunk.file_offset to 0, others to where they
// wrote the column metadata (past the chunk, or in the footer); readers
// find a chunk by its page offsets and ignore file_offset, and so must
// the adapter: the same chunks as with the offsets parquet-go writes.
func TestQuirkFileOffset(t *testing.T) {
	base := small()
	want, err := formattest.Layout(Adapter{}, base)
	if err != nil {
		t.Fatal(err)
	}
	footStart := int64(len(base) - 8 - len(footerOf(base)))
	for _, tc := range []struct {
		name string
		off  func(c *format.ColumnChunk) int64
	}{
		{"zero", func(*format.ColumnChunk) int64 { return 0 }},
		{"after the chunk", func(c *format.ColumnChunk) int64 {
			m := c.MetaData
			start := m.DataPageOffset
			if m.DictionaryPageOffset > 0 && m.DictionaryPageOffset < start {
				start = m.DictionaryPageOffset
			}
			return start + m.TotalCompressedSize
		}},
		{"in the footer", func(*format.ColumnChunk) int64 { return footStart + 17 }},
		{"past the file", func(*format.ColumnChunk) int64 { return int64(len(base)) << 4 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := rewrite(t, base, func(md *format.FileMetaData) {
				eachColumn(md, func(c *format.ColumnChunk) { c.FileOffset = tc.off(c) })
			})
			if _, err := openPQ(data); err != nil {
				t.Fatalf("parquet-go refuses it: %v", err)
			}
			got, err := formattest.Layout(Adapter{}, data)
			if err != nil {
				t.Fatal(err)
			}
			sameChunks(t, want, got)
		})
	}
}

// quirkFiles are generated files reproducing each writer quirk of issue
// 33 that a reader accepts; the adapter must read every one natively.
func quirkFiles(t *testing.T) []formattest.File {
	base := small()
	var out []formattest.File
	add := func(name string, data []byte) { out = append(out, formattest.File{Name: name, Data: data}) }
	add("file-offset-zero", rewrite(t, base, func(md *format.FileMetaData) {
		eachColumn(md, func(c *format.ColumnChunk) { c.FileOffset = 0 })
	}))
	foot, _ := emptyListsTypeZero(footerOf(base))
	add("empty-lists-type-0", withFooter(base, foot))
	for _, codec := range []string{"brotli", "lz4raw"} {
		add("geometry-"+codec, genFile(t, pqgen.Config{Rows: 900, RowGroups: 3, Seed: 2, NoCovering: true, Codec: codec}))
	}
	add("geometry-lzo", relabelLZO(t, genFile(t, pqgen.Config{Rows: 900, RowGroups: 3, Seed: 2, NoCovering: true, Codec: "snappy"})))
	for _, geography := range []bool{false, true} {
		name := map[bool]string{false: "native-geometry", true: "native-geography"}[geography]
		data, _ := nativeFile(t, geography)
		add(name, data)
		add(name+"-no-stats", rewrite(t, data, noGeoStats))
	}
	return out
}

// TestQuirkFilesConform runs the conformance suite (native, covering,
// byte-exact, deterministic) over every quirk file.
func TestQuirkFilesConform(t *testing.T) {
	files := quirkFiles(t)
	native := map[string]bool{}
	for _, f := range files {
		if _, err := openPQ(f.Data); err != nil {
			t.Fatalf("%s: parquet-go refuses it: %v", f.Name, err)
		}
		native[f.Name] = true
	}
	formattest.Run(t, Adapter{}, files, native)
}

// eachColumn calls f with every column chunk of md.
func eachColumn(md *format.FileMetaData, f func(*format.ColumnChunk)) {
	for i := range md.RowGroups {
		for j := range md.RowGroups[i].Columns {
			f(&md.RowGroups[i].Columns[j])
		}
	}
}

// relabelLZO marks every column chunk of data LZO-compressed. No writer at
// hand makes LZO; the decoder stops at the codec, before any page body.
func relabelLZO(t *testing.T, data []byte) []byte {
	return rewrite(t, data, func(md *format.FileMetaData) {
		eachColumn(md, func(c *format.ColumnChunk) { c.MetaData.Codec = format.LZO })
	})
}
