package merge3

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/geom"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
)

// list makes a sorted chunk list from "key=content" words; the content
// names the chunk's bytes.
func list(s string) []manifest.Chunk {
	var out []manifest.Chunk
	for _, w := range strings.Fields(s) {
		k, v, _ := strings.Cut(w, "=")
		bb := geom.BBox{MinX: 0, MinY: 0, MaxX: 1, MaxY: float64(len(k))}
		out = append(out, manifest.Chunk{Key: k, Size: int64(len(v)), ID: hashing.Sum([]byte(v)), BBox: &bb})
	}
	sort.Slice(out, func(i, j int) bool { return manifest.NaturalLess(out[i].Key, out[j].Key) })
	return out
}

func show(r Result) string {
	var b strings.Builder
	for _, c := range r.Chunks {
		fmt.Fprintf(&b, "%s:%d ", c.Key, c.From)
	}
	for _, c := range r.Conflicts {
		fmt.Fprintf(&b, "!%s ", c.Key)
	}
	return strings.TrimSpace(b.String())
}

func TestChunks(t *testing.T) {
	for _, tc := range []struct {
		name, base, ours, theirs, want string
	}{
		{"unchanged", "a=1 b=2", "a=1 b=2", "a=1 b=2", "a:0 b:0"},
		{"both sides, different keys", "z0/r0/c0=1 z0/r0/c1=2 z0/r1/c0=3", "z0/r0/c0=X z0/r0/c1=2 z0/r1/c0=3", "z0/r0/c0=1 z0/r0/c1=2 z0/r1/c0=Y", "z0/r0/c0:1 z0/r0/c1:0 z0/r1/c0:2"},
		{"identical change", "a=1", "a=2", "a=2", "a:0"},
		{"conflict", "a=1 b=2", "a=X b=2", "a=Y b=2", "b:0 !a"},
		{"theirs added", "a=1", "a=1", "a=1 b=2", "a:0 b:2"},
		{"ours added", "a=1", "a=1 c=3", "a=1", "a:0 c:1"},
		{"both added same", "a=1", "a=1 c=3", "a=1 c=3", "a:0 c:0"},
		{"both added differently", "a=1", "a=1 c=3", "a=1 c=4", "a:0 !c"},
		{"theirs deleted", "a=1 b=2", "a=1 b=2", "a=1", "a:0"},
		{"deleted against changed", "a=1 b=2", "a=1 b=X", "a=1", "a:0 !b"},
		{"both deleted", "a=1 b=2", "a=1", "a=1", "a:0"},
		{"natural order", "z0/r2/c0=1 z0/r10/c0=2", "z0/r2/c0=1 z0/r10/c0=X", "z0/r2/c0=Y z0/r10/c0=2", "z0/r2/c0:2 z0/r10/c0:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := show(Chunks(list(tc.base), list(tc.ours), list(tc.theirs))); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestConflictNamesBBoxAndSides(t *testing.T) {
	r := Chunks(list("k=1"), list("k=2"), list("k=3"))
	if len(r.Conflicts) != 1 {
		t.Fatalf("conflicts %v", r.Conflicts)
	}
	c := r.Conflicts[0]
	if c.BBox == nil || c.BBox.MaxY != 1 || c.Ours != hashing.Sum([]byte("2")) || c.Theirs != hashing.Sum([]byte("3")) {
		t.Errorf("conflict %+v", c)
	}
}

// FuzzChunks checks the merge's laws on random chunk lists: the result is
// sorted with unique keys, every key is either merged or a conflict, a
// side equal to the base yields the other side, and swapping the sides
// swaps Ours and Theirs only.
func FuzzChunks(f *testing.F) {
	f.Add("a=1 b=2", "a=X b=2", "a=1 b=Y")
	f.Add("a=1", "a=2", "a=3")
	f.Add("", "z0/r0/c0=1", "z0/r0/c0=2 z0/r1/c1=3")
	f.Add("z2/r0/c0=1 z0/r10/c3=2", "z0/r10/c3=2", "z2/r0/c0=1 z0/r10/c3=4 mask/z0/r0/c0=5")
	f.Fuzz(func(t *testing.T, bs, os, ts string) {
		base, ours, theirs := uniq(list(bs)), uniq(list(os)), uniq(list(ts))
		r := Chunks(base, ours, theirs)
		keys := map[string]bool{}
		for i, c := range r.Chunks {
			if i > 0 && !manifest.NaturalLess(r.Chunks[i-1].Key, c.Key) {
				t.Fatalf("unsorted %q, %q", r.Chunks[i-1].Key, c.Key)
			}
			keys[c.Key] = true
		}
		for _, c := range r.Conflicts {
			if keys[c.Key] {
				t.Fatalf("key %q both merged and in conflict", c.Key)
			}
		}
		if s := show(Chunks(base, base, theirs)); len(Chunks(base, base, theirs).Conflicts) != 0 || len(Chunks(base, base, theirs).Chunks) != len(theirs) {
			t.Fatalf("ours = base must give theirs: %s", s)
		}
		swapped := Chunks(base, theirs, ours)
		if len(swapped.Chunks) != len(r.Chunks) || len(swapped.Conflicts) != len(r.Conflicts) {
			t.Fatalf("not symmetric: %s vs %s", show(r), show(swapped))
		}
		for i, c := range r.Chunks {
			want := map[Side]Side{Same: Same, Ours: Theirs, Theirs: Ours}[c.From]
			if swapped.Chunks[i].Key != c.Key || swapped.Chunks[i].From != want {
				t.Fatalf("not symmetric: %s vs %s", show(r), show(swapped))
			}
		}
	})
}

// uniq keeps the first chunk of each key and only keys with a strict
// natural order among them, as a decoded manifest has.
func uniq(l []manifest.Chunk) []manifest.Chunk {
	var out []manifest.Chunk
	for _, c := range l {
		if len(out) == 0 || manifest.NaturalLess(out[len(out)-1].Key, c.Key) {
			out = append(out, c)
		}
	}
	return out
}
