package parquet

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
	"github.com/chunkvc/chunkvc/formats/parquet/pqgen"
)

// footerSeeds are the footers of the corpus files and of generated ones.
func footerSeeds(t testing.TB) [][]byte {
	var out [][]byte
	for _, c := range formattest.Corpus(t, ".parquet", ".parq") {
		if len(c.Data) >= 12 {
			out = append(out, footerOf(c.Data))
		}
	}
	out = append(out, footerOf(small()))
	foot, _ := emptyListsTypeZero(footerOf(small()))
	return append(out, foot, footerOf(genFile(t, pqgen.Config{Rows: 300, RowGroups: 3, Seed: 7})))
}

// roundTrip checks decode → encode → decode gives the same tree, and that
// the canonical encoding is a fixed point.
func roundTrip(t *testing.T, data []byte) {
	v, n, err := decodeStruct(data)
	if err != nil {
		return
	}
	enc := v.encode(nil)
	w, m, err := decodeStruct(enc)
	if err != nil {
		t.Fatalf("re-decode of %d bytes: %v", len(enc), err)
	}
	if m != len(enc) {
		t.Fatalf("re-decode read %d of %d bytes", m, len(enc))
	}
	if !reflect.DeepEqual(v, w) {
		t.Fatalf("tree of %d input bytes changed through encode", n)
	}
	if again := w.encode(nil); !bytes.Equal(again, enc) {
		t.Fatal("the encoding is not canonical")
	}
}

// Every corpus footer round-trips, and its tree holds every field: the
// canonical encoding of a writer's footer is byte for byte the footer.
func TestTreeRoundTripFooters(t *testing.T) {
	seeds := footerSeeds(t)
	if len(seeds) < 4 {
		t.Fatalf("only %d footers", len(seeds))
	}
	same := 0
	for _, f := range seeds {
		roundTrip(t, f)
		v, _, err := decodeStruct(f)
		if err != nil {
			t.Fatalf("footer: %v", err)
		}
		if bytes.Equal(v.encode(nil), f) {
			same++
		}
	}
	if same == 0 {
		t.Fatal("no footer encodes back to its own bytes")
	}
}

// Unknown fields, bools in fields and lists, maps, sets, doubles and long
// field ids survive.
func TestTreeUnknownFields(t *testing.T) {
	v := &tvalue{typ: tStruct, fields: []tfield{
		{id: 1, v: tvalue{typ: tI32, i: -7}},
		{id: 40, v: tvalue{typ: tTrue, i: 0}},
		{id: 3, v: tvalue{typ: tList, elem: tTrue, items: []tvalue{{typ: tTrue, i: 1}, {typ: tTrue}}}},
		{id: 4, v: tvalue{typ: tMap, elem: tBinary, velem: tDouble, items: []tvalue{{typ: tBinary, b: []byte("k")}, {typ: tDouble, i: 42}}}},
		{id: 5, v: tvalue{typ: tSet, elem: tI64, items: make([]tvalue, 20)}},
		{id: -2, v: tvalue{typ: tStruct, fields: []tfield{{id: 1, v: tvalue{typ: tBinary, b: []byte{}}}}}},
	}}
	for i := range v.fields[4].v.items {
		v.fields[4].v.items[i] = tvalue{typ: tI64, i: int64(i) << 40}
	}
	w, n, err := decodeStruct(v.encode(nil))
	if err != nil || n != len(v.encode(nil)) {
		t.Fatalf("decode: %v (%d)", err, n)
	}
	if !reflect.DeepEqual(v, w) {
		t.Fatalf("got %+v\nwant %+v", w, v)
	}
}

// FuzzTree: decode → encode → decode gives the same tree on any input.
func FuzzTree(f *testing.F) {
	for _, s := range footerSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(roundTrip)
}
