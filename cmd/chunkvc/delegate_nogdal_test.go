//go:build !gdal

package main

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// companionReview runs its program with the revisions as plain arguments
// (no shell), refuses revisions that could read as options, and stops a
// program whose page passes the size limit. echo shows the argument
// vector; the plain chunkvc writes real pages.
func TestCompanionReview(t *testing.T) {
	look := func(name string) string {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return p
	}
	c := companionReview{bin: look("echo"), dir: t.TempDir(), timeout: time.Minute, maxPage: 1 << 20}
	var page bytes.Buffer
	if err := c.write(context.Background(), &page, "HEAD~1", "x;rm -rf $HOME"); err != nil {
		t.Fatal(err)
	}
	if want := "diff -q --progress none --format html HEAD~1 x;rm -rf $HOME\n"; page.String() != want {
		t.Errorf("arguments %q, want %q", page.String(), want)
	}
	for _, rev := range []string{"-o/tmp/x", "--output=x", "", "a\nb"} {
		if err := c.write(context.Background(), &page, "HEAD", rev); err == nil || !strings.Contains(err.Error(), "refused") {
			t.Errorf("revision %q: %v, want it refused", rev, err)
		}
	}
	// The plain chunkvc itself, with no chunkvc-gdal to hand diff to,
	// writes a real page: whole under a large limit, stopped under a
	// small one.
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "*.bin")
	r.write("a.bin", randomBytes(5000, 1))
	r.cv("commit", "-q", "-m", "v1")
	r.write("a.bin", randomBytes(6000, 2))
	r.cv("commit", "-q", "-m", "v2")
	c = companionReview{bin: binary, dir: r.dir, timeout: time.Minute, maxPage: 1 << 20}
	page.Reset()
	if err := c.write(context.Background(), &page, "HEAD~1", "HEAD"); err != nil || !strings.Contains(page.String(), "<title>chunkvc review HEAD~1 → HEAD</title>") {
		t.Errorf("page: %v\n%.300s", err, page.String())
	}
	c.maxPage = 100
	page.Reset()
	if err := c.write(context.Background(), &page, "HEAD~1", "HEAD"); err == nil || !strings.Contains(err.Error(), "page larger than 100 bytes") || page.Len() != 0 {
		t.Errorf("page over the limit: %v, %d bytes written", err, page.Len())
	}
	c.bin = look("false")
	if err := c.write(context.Background(), &page, "A", "B"); err == nil || !strings.Contains(err.Error(), "exit status 1") {
		t.Errorf("failing program: %v", err)
	}
}
