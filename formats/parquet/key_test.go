package parquet

import (
	"bytes"
	"context"
	"testing"
)

// Every key the adapter writes for the corpus parses and spells back the
// same.
func TestParseKeyCorpus(t *testing.T) {
	n := 0
	for _, f := range corpusParquet(t) {
		l, err := Adapter{}.Layout(context.Background(), bytes.NewReader(f.Data), int64(len(f.Data)))
		if err != nil {
			continue
		}
		for _, s := range append(l.Segments, l.Aliases...) {
			if !s.IsChunk() {
				continue
			}
			k, ok := ParseKey(s.Key)
			if !ok || k.String() != s.Key {
				t.Errorf("%s: key %q parses as %+v (ok %v), spelled %q", f.Name, s.Key, k, ok, k.String())
			}
			n++
		}
	}
	if n < 500 {
		t.Errorf("only %d keys checked", n)
	}
}

func TestParseKey(t *testing.T) {
	cases := map[string]Key{
		"rg0/geometry/p3":       {RowGroup: 0, Column: "geometry", Part: Page, Page: 3},
		"rg12/a.b%2Fc/bloom":    {RowGroup: 12, Column: "a.b%2Fc", Part: Bloom},
		"rg1/x/ci":              {RowGroup: 1, Column: "x", Part: ColumnIndex},
		"rg2/long~0123456789ab": {RowGroup: 2, Column: "long~0123456789ab"},
		"rg0/v/p0@00ff":         {Column: "v", Part: Page, Cut: true, Piece: "00ff"},
		"gap@abcd":              {Gap: true, Cut: true, Piece: "abcd"},
	}
	for s, want := range cases {
		if got, ok := ParseKey(s); !ok || got != want || got.String() != s {
			t.Errorf("ParseKey(%q) = %+v %v (%q), want %+v", s, got, ok, got.String(), want)
		}
	}
	for _, s := range []string{"", "gap", "rg", "rg0", "rg0/", "rg01/x", "rgx/x", "rg0/x/p", "rg0/x/q1", "rg0/x y", "z0/r0/c0", "rg0/x/p1/y", "rg-1/x"} {
		if k, ok := ParseKey(s); ok {
			t.Errorf("ParseKey(%q) accepted: %+v", s, k)
		}
	}
}

func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"rg0/geometry/p3", "rg12/a.b%2Fc/bloom", "gap@abcd", "rg0/v/p0@00ff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if k, ok := ParseKey(s); ok && k.String() != s {
			t.Fatalf("ParseKey(%q) spells back %q", s, k.String())
		}
	})
}

func TestShard(t *testing.T) {
	for k, want := range map[string]string{"rg12/a.b%2Fc/bloom": "rg12", "rg0/v/p0@00ff": "rg0", "gap@abcd": "gap", "z0/r0/c0": "other"} {
		if got := (Adapter{}).Shard(k); got != want {
			t.Errorf("Shard(%q) = %q, want %q", k, got, want)
		}
	}
}
