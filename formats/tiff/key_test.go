package tiff

import (
	"bytes"
	"context"
	"testing"
)

// Every key the adapter writes for the corpus parses, and spells back the
// same: the grammar ParseKey reads is the one the writer uses.
func TestParseKeyCorpus(t *testing.T) {
	n := 0
	for _, f := range corpusTIFFs(t) {
		data := f.Data
		l, err := Adapter{}.Layout(context.Background(), bytes.NewReader(data), int64(len(data)))
		if err != nil {
			continue // falls back to generic: no keys of ours
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
	if n < 1000 {
		t.Errorf("only %d keys checked", n)
	}
}

func TestParseKey(t *testing.T) {
	cases := map[string]Key{
		"z0/r2/c10":          {IFD: -1, Level: 0, Tiled: true, Row: 2, Col: 10, Plane: -1},
		"mask/z3/r0/c0":      {IFD: -1, Mask: true, Level: 3, Tiled: true, Plane: -1},
		"ifd4/z1/s7/p2":      {IFD: 4, Level: 1, Row: 7, Plane: 2},
		"ifd2/r1/c1":         {IFD: 2, Level: -1, Tiled: true, Row: 1, Col: 1, Plane: -1},
		"z0/s0@0123456789ab": {IFD: -1, Level: 0, Plane: -1, Cut: true, Part: "0123456789ab"},
		"z0/s0@":             {IFD: -1, Level: 0, Plane: -1, Cut: true},
		"gap/3@00ff":         {Gap: true, IFD: -1, Level: -1, Row: 3, Plane: -1, Cut: true, Part: "00ff"},
	}
	for s, want := range cases {
		if got, ok := ParseKey(s); !ok || got != want || got.String() != s {
			t.Errorf("ParseKey(%q) = %+v %v (%q), want %+v", s, got, ok, got.String(), want)
		}
	}
	for _, s := range []string{"", "z", "z0", "z0/", "z0/r1", "z0/r1/c", "z01/r1/c1", "r1/c1", "z0/r1/c1/x", "rg0/a/p0", "z-1/s0", "mask/r0/c0", "z0/s0/p", "gap/", "gap/x@", "gap/1/2"} {
		if k, ok := ParseKey(s); ok {
			t.Errorf("ParseKey(%q) accepted: %+v", s, k)
		}
	}
}

func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"z0/r2/c10", "mask/z3/r0/c0", "ifd4/z1/s7/p2", "z0/s0@0123456789ab", "ifd2/r1/c1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if k, ok := ParseKey(s); ok && k.String() != s {
			t.Fatalf("ParseKey(%q) spells back %q", s, k.String())
		}
	})
}

func TestShard(t *testing.T) {
	cases := map[string]string{
		"z0/r2/c10":          "z0/r0/c8",
		"z0/r17/c30":         "z0/r16/c24",
		"mask/z3/r0/c0":      "mask/z3/r0/c0",
		"ifd4/z1/s70/p2":     "ifd4/z1/s64",
		"ifd2/r9/c1":         "ifd2/r8/c0",
		"z0/s0@0123456789ab": "z0/s0",
		"gap/3@00ff":         "gap",
		"not a key":          "other",
	}
	for k, want := range cases {
		if got := (Adapter{}).Shard(k); got != want {
			t.Errorf("Shard(%q) = %q, want %q", k, got, want)
		}
	}
}
