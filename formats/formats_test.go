package formats

import (
	"errors"
	"fmt"
	"testing"
)

func TestMergeRanges(t *testing.T) {
	got := MergeRanges([][2]int64{{10, 20}, {0, 5}, {5, 8}, {19, 30}, {40, 40}, {50, 60}})
	want := [][2]int64{{0, 8}, {10, 30}, {50, 60}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("MergeRanges = %v, want %v", got, want)
	}
}

func TestCheckRejectsBadLayouts(t *testing.T) {
	seg := func(off, n int64, key string) Segment { return Segment{Off: off, Len: n, Key: key} }
	cases := map[string]*Layout{
		"gap":         {Segments: []Segment{seg(0, 10, ""), seg(11, 9, "k")}},
		"overlap":     {Segments: []Segment{seg(0, 10, ""), seg(9, 11, "k")}},
		"short":       {Segments: []Segment{seg(0, 10, "k")}},
		"past end":    {Segments: []Segment{seg(0, 25, "k")}},
		"empty":       {Segments: []Segment{seg(0, 0, "k"), seg(0, 20, "")}},
		"bad key":     {Segments: []Segment{seg(0, 20, "a b")}},
		"at key":      {Segments: []Segment{seg(0, 20, "a@b")}},
		"alias":       {Segments: []Segment{seg(0, 20, "k")}, Aliases: []Segment{seg(0, 10, "j")}},
		"derived+key": {Segments: []Segment{{Off: 0, Len: 20, Key: "k", Derive: "x"}}},
	}
	for name, l := range cases {
		if err := Check(l, 20); !errors.Is(err, ErrLayout) {
			t.Errorf("%s: Check = %v, want ErrLayout", name, err)
		}
	}
	good := &Layout{Segments: []Segment{seg(0, 5, ""), seg(5, 10, "cdc@"), {Off: 15, Len: 5, Derive: "fgb-rtree"}}, Aliases: []Segment{seg(5, 10, "dup")}}
	if err := Check(good, 20); err != nil {
		t.Fatalf("good layout: %v", err)
	}
}

// Coalesce merges touching inline segments, drops empty ones, keeps chunks
// and derived segments apart, and needs no second slice.
func TestCoalesce(t *testing.T) {
	in := func() []Segment {
		return []Segment{
			{Off: 0, Len: 4}, {Off: 4, Len: 0}, {Off: 4, Len: 6}, {Off: 10, Len: 5, Key: "a"},
			{Off: 15, Len: 2}, {Off: 17, Len: 3, Derive: "idx"}, {Off: 20, Len: 1}, {Off: 21, Len: 1},
			{Off: 22, Len: 0, Key: "empty"}, {Off: 22, Len: 2},
		}
	}
	want := []Segment{
		{Off: 0, Len: 10}, {Off: 10, Len: 5, Key: "a"}, {Off: 15, Len: 2}, {Off: 17, Len: 3, Derive: "idx"},
		{Off: 20, Len: 2}, {Off: 22, Len: 0, Key: "empty"}, {Off: 22, Len: 2},
	}
	if got := Coalesce(in()); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Coalesce = %v\nwant %v", got, want)
	}
	base, segs := in(), in()
	if n := testing.AllocsPerRun(10, func() { copy(segs, base); Coalesce(segs) }); n != 0 {
		t.Errorf("Coalesce allocated %v times", n)
	}
}
