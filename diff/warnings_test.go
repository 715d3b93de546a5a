package diff

import (
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/manifest"
)

func TestWarnings(t *testing.T) {
	old := cogManifest("deflate")
	has := func(w []string, prefix string) bool {
		for _, s := range w {
			if strings.HasPrefix(s, prefix) {
				return true
			}
		}
		return false
	}
	cases := []struct {
		name   string
		cur    *manifest.Manifest
		stale  bool
		reenc  bool
		format string
	}{
		{"full-resolution tile alone", cogManifest("deflate", "z0/r1/c2"), true, false, ""},
		{"with the overview above it", cogManifest("deflate", "z0/r1/c2", "z1/r0/c1"), false, false, ""},
		{"overview elsewhere", cogManifest("deflate", "z0/r1/c2", "z1/r1/c0"), true, false, ""},
		{"re-encoded", cogManifest("zstd"), false, true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := Warnings(old, tc.cur, manifest.Diff(old, tc.cur))
			if got := has(w, "stale overviews: 1 "); got != tc.stale {
				t.Errorf("stale overviews %v, want %v: %q", got, tc.stale, w)
			}
			if got := has(w, "re-encoded: COMPRESSION deflate → zstd, 21/21"); got != tc.reenc {
				t.Errorf("re-encoded %v, want %v: %q", got, tc.reenc, w)
			}
		})
	}
	moved := *cogManifest("deflate")
	moved.Format = "generic"
	moved.Summary = append(moved.Summary, manifest.Field{Name: "schema", Value: "x"})
	if w := Warnings(old, &moved, manifest.Diff(old, &moved)); !has(w, "format changed: tiff → generic") || has(w, "schema") {
		t.Errorf("format change: %q", w)
	}
}
