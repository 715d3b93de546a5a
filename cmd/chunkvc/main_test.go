package main

import (
	"bytes"
	"testing"
)

// TestMemoryLimit: gc and fsck keep the large heap limit however they are
// called, commit and status the one that holds a commit under 300 MB, and
// the other commands one above a large checkout's live heap.
func TestMemoryLimit(t *testing.T) {
	var out bytes.Buffer
	root := newRootCmd(&globalOptions{stdout: &out, stderr: &out})
	for _, c := range []struct {
		args []string
		want int64
	}{
		{[]string{"gc"}, 1 << 30},
		{[]string{"-C", "some/dir", "-q", "gc", "--grace", "1h"}, 1 << 30},
		{[]string{"fsck", "--remote"}, 1 << 30},
		{[]string{"commit", "-m", "x"}, 224 << 20},
		{[]string{"-C", "gc", "commit", "-m", "gc"}, 224 << 20},
		{[]string{"status", "--json"}, 224 << 20},
		{[]string{"checkout", "HEAD", "--", "gc"}, 512 << 20},
		{[]string{"-C", "commit", "cat", "HEAD:commit"}, 512 << 20},
		{nil, 512 << 20},
	} {
		if got := memoryLimit(root, c.args); got != c.want {
			t.Errorf("memoryLimit(%q) = %d MiB, want %d MiB", c.args, got>>20, c.want>>20)
		}
	}
}

// TestGCSettings: commit and status collect at 9× their live heap, the
// other commands at 5×.
func TestGCSettings(t *testing.T) {
	var out bytes.Buffer
	root := newRootCmd(&globalOptions{stdout: &out, stderr: &out})
	for _, c := range []struct {
		args    []string
		percent int
	}{
		{[]string{"commit", "-m", "x"}, 800},
		{[]string{"-C", "d", "status", "--json"}, 800},
		{[]string{"checkout", "HEAD", "--", "commit"}, 400},
		{[]string{"gc"}, 400},
		{nil, 400},
	} {
		if got, limit := gcSettings(root, c.args); got != c.percent || limit != memoryLimit(root, c.args) {
			t.Errorf("gcSettings(%q) = %d, %d MiB; want %d, %d MiB", c.args, got, limit>>20, c.percent, memoryLimit(root, c.args)>>20)
		}
	}
}
