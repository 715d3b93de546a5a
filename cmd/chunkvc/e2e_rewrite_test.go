package main

import (
	"os"
	"strings"
	"testing"
)

// A partition rewritten under a new name (the old removed, the new one
// mostly the same bytes) is one "rewritten" entry in diff, paired with
// the file it came from, and its "to move" figure is what the commit then
// uploads; an unrelated new file is not paired.
func TestDiffPairsRewrites(t *testing.T) {
	r := newRunner(t)
	r.git("init", "-q", "-b", "main")
	r.cv("init")
	r.cv("track", "lake/**")
	old := randomBytes(4<<20, 1)
	r.write("lake/cell=7/part-07.bin", old)
	r.write("lake/cell=9/part-01.bin", randomBytes(1<<20, 2))
	r.cv("commit", "-q", "-m", "v1")

	rewritten := append(append([]byte{}, old[:3<<20]...), randomBytes(1<<20, 3)...)
	if err := os.Remove(r.path("lake/cell=7/part-07.bin")); err != nil {
		t.Fatal(err)
	}
	r.write("lake/cell=7/part-08.bin", rewritten)
	r.write("lake/cell=9/part-02.bin", randomBytes(1<<20, 4))
	d := r.diffJSON(binary)
	var rw, added int
	var move int64
	for _, f := range d.Files {
		switch {
		case f.Status == "rewritten" && f.Path == "lake/cell=7/part-08.bin" && f.OldPath == "lake/cell=7/part-07.bin":
			rw++
			move = f.Bytes
		case f.Status == "added" && f.Path == "lake/cell=9/part-02.bin":
			added++
		case f.Status == "deleted" && f.Path == "lake/cell=7/part-07.bin":
			t.Errorf("the rewritten partition's old file is listed as deleted too")
		}
	}
	if rw != 1 || added != 1 || len(d.Files) != 2 {
		t.Fatalf("diff of a rewrite: %+v", d.Files)
	}
	if move <= 0 || move >= 3<<20 {
		t.Errorf("to move %d bytes for a rewrite that kept 3 of 4 MiB", move)
	}
	text := r.cv("diff")
	if !strings.Contains(text, "rewritten") || !strings.Contains(text, "of bytes shared") {
		t.Errorf("text diff of a rewrite:\n%s", text)
	}
	var c struct {
		Files []struct {
			Path     string `json:"path"`
			NewBytes int64  `json:"new_bytes"`
		} `json:"files"`
	}
	r.jsonOf(&c, "commit", "--json", "-m", "rewrite")
	for _, f := range c.Files {
		if f.Path == "lake/cell=7/part-08.bin" && f.NewBytes != move {
			t.Errorf("diff said %d bytes to move, the commit stored %d", move, f.NewBytes)
		}
	}
}
