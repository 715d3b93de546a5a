package main

import (
	"bytes"
	"testing"
)

// TestGCSettings: gc and fsck keep the large heap limit however they are
// called, commit and status the one that holds a commit under 300 MB and
// collect at 9× their live heap, checkout, pull and clone the one that
// holds a large checkout under 300 MB, and the other commands collect at
// 5× under a larger limit.
func TestGCSettings(t *testing.T) {
	var out bytes.Buffer
	root := newRootCmd(&globalOptions{stdout: &out, stderr: &out})
	for _, c := range []struct {
		args    []string
		percent int
		limit   int64
	}{
		{[]string{"gc"}, 400, 1 << 30},
		{[]string{"-C", "some/dir", "-q", "gc", "--grace", "1h"}, 400, 1 << 30},
		{[]string{"fsck", "--remote"}, 400, 1 << 30},
		{[]string{"commit", "-m", "x"}, 800, 224 << 20},
		{[]string{"-C", "gc", "commit", "-m", "gc"}, 800, 224 << 20},
		{[]string{"-C", "d", "status", "--json"}, 800, 224 << 20},
		{[]string{"checkout", "HEAD", "--", "gc"}, 400, 192 << 20},
		{[]string{"-C", "d", "pull"}, 400, 192 << 20},
		{[]string{"clone", "src", "dst"}, 400, 192 << 20},
		{[]string{"-C", "commit", "cat", "HEAD:commit"}, 400, 512 << 20},
		{nil, 400, 512 << 20},
	} {
		if percent, limit := gcSettings(root, c.args); percent != c.percent || limit != c.limit {
			t.Errorf("gcSettings(%q) = %d, %d MiB; want %d, %d MiB", c.args, percent, limit>>20, c.percent, c.limit>>20)
		}
	}
}
