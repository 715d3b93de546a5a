package parquet

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
	"github.com/chunkvc/chunkvc/formats/parquet/pqgen"
)

// columnSeeds returns up to max column chunks of the corpus files and of
// a generated GeoParquet, with their leaves, as DecodeColumn takes them.
func columnSeeds(t testing.TB, max int) (chunks [][]byte, codecs []int32, leaves []Leaf) {
	var gen bytes.Buffer
	if err := pqgen.Write(&gen, pqgen.Config{Rows: 300, RowGroups: 2, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	files := append([]formattest.File{{Name: "gen", Data: gen.Bytes()}}, formattest.Corpus(t, ".parquet", ".parq")...)
	for _, f := range files {
		ft, err := ReadFooter(bytes.NewReader(f.Data), int64(len(f.Data)))
		if err != nil {
			continue
		}
		for i := range ft.RowGroups() {
			for j := range ft.Leaves {
				chunk, codec, err := ft.ColumnChunk(bytes.NewReader(f.Data), i, j)
				if err != nil || len(chunk) > 1<<16 || len(chunks) >= max {
					continue
				}
				chunks, codecs, leaves = append(chunks, chunk), append(codecs, codec), append(leaves, ft.Leaves[j])
			}
		}
	}
	return chunks, codecs, leaves
}

// FuzzDecodeColumn: no panic and no runaway allocation on any column
// chunk; what decodes is consistent with its levels and type. Seeds:
// column chunks of the corpus and of a generated GeoParquet.
func FuzzDecodeColumn(f *testing.F) {
	chunks, codecs, leaves := columnSeeds(f, 400)
	for i := range chunks {
		l := leaves[i]
		f.Add(chunks[i], codecs[i], l.Type, l.TypeLength, uint8(l.MaxDef), uint8(l.MaxRep))
	}
	f.Fuzz(func(t *testing.T, chunk []byte, codec, typ, typeLen int32, maxDef, maxRep uint8) {
		if maxRep > maxDef || typeLen > 1<<12 {
			return
		}
		l := &Leaf{Type: typ, TypeLength: typeLen, MaxDef: int(maxDef), MaxRep: int(maxRep)}
		c, err := DecodeColumn(chunk, codec, l)
		if err != nil {
			return
		}
		checkColumn(t, c, l)
	})
}

// checkColumn fails t unless c's levels and values agree with leaf l.
func checkColumn(t *testing.T, c *Column, l *Leaf) {
	t.Helper()
	if l.MaxRep > 0 && len(c.Rep) != len(c.Def) {
		t.Fatalf("%d repetition levels, %d definition levels", len(c.Rep), len(c.Def))
	}
	if l.MaxDef > 0 {
		present := 0
		for _, d := range c.Def {
			if int(d) == l.MaxDef {
				present++
			}
		}
		if present != len(c.Values) {
			t.Fatalf("%d values at the top definition level, %d values", present, len(c.Values))
		}
	}
	want := map[int32]string{TypeBoolean: "bool", TypeInt32: "int32", TypeInt64: "int64", TypeInt96: "[]uint8",
		TypeFloat: "float32", TypeDouble: "float64", TypeByteArray: "[]uint8", TypeFixedLenByteArray: "[]uint8"}[l.Type]
	for _, v := range c.Values {
		if got := fmt.Sprintf("%T", v); got != want {
			t.Fatalf("a %s value in a %s column", got, typeName(l.Type))
		}
		if b, ok := v.([]byte); ok && l.Type == TypeFixedLenByteArray && len(b) != int(l.TypeLength) {
			t.Fatalf("%d bytes in a FIXED_LEN_BYTE_ARRAY(%d)", len(b), l.TypeLength)
		}
	}
}

// Every seed column chunk decodes, consistently.
func TestDecodeColumnSeeds(t *testing.T) {
	chunks, codecs, leaves := columnSeeds(t, 1<<30)
	decoded := 0
	for i := range chunks {
		c, err := DecodeColumn(chunks[i], codecs[i], &leaves[i])
		if err != nil {
			if !errors.Is(err, ErrUnsupported) {
				t.Logf("%s: %v", leaves[i].Name(), err)
			}
			continue
		}
		checkColumn(t, c, &leaves[i])
		decoded++
	}
	if decoded < len(chunks)*9/10 {
		t.Fatalf("%d of %d column chunks decoded", decoded, len(chunks))
	}
}

// What the decoder does not read is an ErrUnsupported error that says
// what: a codec, an encoding, a physical type.
func TestDecodeColumnUnsupported(t *testing.T) {
	// A v1 data page of one INT32 value: header (type 0, sizes 4 and 4,
	// data_page_header{num_values 1, encoding, RLE, RLE}), then 4 bytes.
	page := func(enc byte) []byte {
		return []byte{0x15, 0x00, 0x15, 0x08, 0x15, 0x08, 0x2c, 0x15, 0x02, 0x15, enc, 0x15, 0x06, 0x15, 0x06, 0x00, 0x00, 1, 0, 0, 0}
	}
	int32Leaf := &Leaf{Type: TypeInt32}
	if c, err := DecodeColumn(page(0), 0, int32Leaf); err != nil || fmt.Sprint(c.Values) != "[1]" {
		t.Fatalf("plain page: %v %v", c, err)
	}
	for _, tc := range []struct {
		chunk []byte
		codec int32
		leaf  *Leaf
		want  string
	}{
		{page(0), 3, int32Leaf, "LZO"},
		{page(2 * 4), 0, int32Leaf, "encoding BIT_PACKED for INT32"},
		{page(2 * 6), 0, int32Leaf, "encoding DELTA_LENGTH_BYTE_ARRAY for INT32"},
		{page(0), 0, &Leaf{Type: 9}, "physical type 9"},
	} {
		_, err := DecodeColumn(tc.chunk, tc.codec, tc.leaf)
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(fmt.Sprint(err), tc.want) {
			t.Errorf("%s: %v", tc.want, err)
		}
	}
}
