package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
	"github.com/chunkvc/chunkvc/repo"
)

// gitObjectBytes is the size of every file under .git/objects of dir.
func gitObjectBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(filepath.Join(dir, ".git", "objects"), func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		if err == nil {
			n += fi.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Issue 27: a COG of thousands of tiles gets a split manifest, and a
// one-window edit grows Git by a root and the shards of the tiles it
// changed (at most 64 KB before git gc), not by a whole new manifest. Both
// versions check out byte for byte and fsck verifies them.
func TestSplitManifestCOGWindowEdit(t *testing.T) {
	formattest.RequireTool(t, "gdal_translate")
	mk := mkdemo(t)
	r := newRunner(t)
	gen := t.TempDir()
	raw := filepath.Join(gen, "dem.bin")
	opts := []string{"-q", "-of", "COG", "-co", "COMPRESS=DEFLATE", "-co", "BLOCKSIZE=64",
		"-a_srs", "EPSG:32633", "-a_ullr", "500000", "4640960", "540960", "4600000"}
	build := func(edit ...string) []byte {
		args := append([]string{"raster", "-o", raw, "-size", "4096"}, edit...)
		if out, err := exec.Command(mk, args...).CombinedOutput(); err != nil {
			t.Fatalf("mkdemo: %v %s", err, out)
		}
		formattest.Run1(t, "gdal_translate", append(opts, raw, r.path("dem.tif"))...)
		return r.read("dem.tif")
	}
	v1 := build()
	r.cv("init")
	r.cv("track", "*.tif")
	r.cv("commit", "-q", "-m", "v1")
	var l1 lsChunks
	r.jsonOf(&l1, "ls-chunks", "dem.tif")
	shards := strings.Fields(r.git("ls-tree", "-r", "--name-only", "HEAD", "--", ".chunkvc/shards/"))
	if len(l1.Chunks) < 4096 || len(shards) < 64 {
		t.Fatalf("%d chunks in %d shards; want a split manifest of thousands of tiles", len(l1.Chunks), len(shards))
	}

	before := gitObjectBytes(t, r.dir)
	v2 := build("-edit", "1900,1900,96,96")
	r.cv("commit", "-q", "-m", "v2")
	grew := gitObjectBytes(t, r.dir) - before
	changed := strings.Fields(r.git("diff", "--name-only", "HEAD~1", "HEAD"))
	t.Logf("%d chunks, %d shards; the edit changed %d files in Git and grew .git/objects by %d bytes", len(l1.Chunks), len(shards), len(changed), grew)
	if grew > 64<<10 || len(changed) > 12 {
		t.Fatalf("a one-window edit grew .git/objects by %d bytes and changed %q; want at most 64 KB, the root and a few shards", grew, changed)
	}
	if out := r.git("status", "--porcelain"); out != "" {
		t.Fatalf("git status after the commit:\n%s", out)
	}

	// Git's textconv shows the root and each shard in words: the
	// changed tiles as key lines, no 64-hex hashes.
	r.git("config", repo.TextconvConfigKey, binary+" diff-textconv")
	r.write(".gitattributes", []byte(repo.TextconvAttribute+"\n"))
	tc := r.git("diff", "HEAD~1", "HEAD")
	if !strings.Contains(tc, "+z0/r29/c29 ") || !strings.Contains(tc, "-z0/r29/c29 ") || strings.Contains(tc, "blake3:") {
		t.Fatalf("textconv diff of a split manifest:\n%s", tc)
	}
	want := fmt.Sprintf("chunks  %d in %d shards (.chunkvc/shards/dem.tif/)\n", len(l1.Chunks), len(shards))
	if root := r.cv("diff-textconv", r.path(".chunkvc/manifests/dem.tif")); !strings.Contains(root, want) {
		t.Fatalf("textconv of the root lacks %q:\n%s", want, root)
	}

	r.cv("fsck", "--verify=full")
	r.cv("checkout", "HEAD~1", "--", "dem.tif")
	if !bytes.Equal(r.read("dem.tif"), v1) {
		t.Fatal("checkout of v1 is not byte-identical")
	}
	r.cv("checkout", "HEAD", "--", "dem.tif")
	if !bytes.Equal(r.read("dem.tif"), v2) {
		t.Fatal("checkout of v2 is not byte-identical")
	}
	if out := r.cv("diff", "HEAD~1", "HEAD"); !strings.Contains(out, "dem.tif") {
		t.Fatalf("diff HEAD~1 HEAD does not name the file:\n%s", out)
	}
}
