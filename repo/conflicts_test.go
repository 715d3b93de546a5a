package repo

import (
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/geom"
)

// ParseConflictLine reads back what ConflictLine writes: key, bbox (as
// manifests spell it) and reason, each optional but the reason.
func FuzzConflictLine(f *testing.F) {
	f.Add("z0/r0/c0", true, 500000.0, 4597440.0, 502560.0, 4600000.0, "changed on both sides (ours 1a2b, theirs 3c4d)")
	f.Add("", false, 0.0, 0.0, 0.0, 0.0, "the merge adds or removes tiles: the sides' IFD structures differ")
	f.Add("t2m/c/3/0/7", false, 0.0, 0.0, 0.0, 0.0, "deleted by ours, changed by theirs")
	f.Add("mask/z1/r0/c0", true, -1e-9, -0.5, 1e20, 3.25, "overview level 1 tile changed on both sides")
	f.Fuzz(func(t *testing.T, key string, boxed bool, x0, y0, x1, y1 float64, reason string) {
		c := MergeConflict{Key: key, Reason: reason}
		b := geom.BBox{MinX: x0, MinY: y0, MaxX: x1, MaxY: y1}
		if boxed && b.Valid() {
			c.BBox = &b
		}
		line := ConflictLine(c)
		got, ok := ParseConflictLine(line)
		// Keys chunkvc writes are single words; reasons are one line.
		plain := !strings.ContainsAny(key, " :[]\n") && !strings.ContainsAny(reason, "\n") && reason != ""
		if !plain {
			return
		}
		if !ok {
			t.Fatalf("%q: not read back", line)
		}
		if got.Key != key || got.Reason != reason {
			t.Fatalf("%q: read key %q reason %q", line, got.Key, got.Reason)
		}
		if (got.BBox == nil) != (c.BBox == nil) || got.BBox != nil && got.BBox.Array() != c.BBox.Array() {
			t.Fatalf("%q: bbox %v, want %v", line, got.BBox, c.BBox)
		}
	})
}

// Lines that are not conflict lines are not taken for one.
func TestParseConflictLineRefuses(t *testing.T) {
	for _, l := range []string{"", "conflicts", "conflict", "conflict z0/r0/c0", "chunk z0/r0/c0 12 abcd", "conflict z0 [1,2,3]: x", "conflict z0 [4,4,1,1]: x"} {
		if c, ok := ParseConflictLine(l); ok {
			t.Errorf("%q read as %+v", l, c)
		}
	}
	if c, ok := ParseConflictLine("conflict: " + strings.Repeat("x", 3)); !ok || c.Key != "" || c.Reason != "xxx" {
		t.Errorf("whole-file conflict read as %+v, %v", c, ok)
	}
}
