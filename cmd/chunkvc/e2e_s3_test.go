package main

import (
	"bytes"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
	"github.com/chunkvc/chunkvc/internal/miniotest"
)

// layoutSize reads the layout blob size from a manifest file.
func layoutSize(t *testing.T, r *runner, p string) int64 {
	t.Helper()
	for _, l := range strings.Split(string(r.read(".chunkvc/manifests/"+p)), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "layout" {
			n, _ := strconv.ParseInt(f[2], 10, 64)
			return n
		}
	}
	t.Fatal("no layout line")
	return 0
}

// Issue 6 against a real MinIO: commit, push, clone, edit one window,
// push, pull — bytes uploaded and downloaded, measured at the server, stay
// within 1.3 × (changed tiles + layout). With MinIO stopped, commit fails
// in bounded time and HEAD stays; restarted, the same commit succeeds.
func TestS3CommitPushClonePull(t *testing.T) {
	formattest.RequireTool(t, "gdal_translate")
	srv := miniotest.Start(t)
	mk := mkdemo(t)
	gen := t.TempDir()
	raw := filepath.Join(gen, "dem.bin")
	a := newRunner(t)
	a.env = append(a.env, srv.Env()...)
	a.env = append(a.env, "CHUNKVC_S3_TIMEOUT=2s", "CHUNKVC_S3_RETRY_TIME=4s")
	cog := func(edit ...string) {
		runTool(t, mk, append([]string{"raster", "-o", raw, "-size", "2048"}, edit...)...)
		formattest.Run1(t, "gdal_translate", append(cogOpts, raw, a.path("dem.tif"))...)
	}
	cog()
	v1 := a.read("dem.tif")
	a.cv("init", "--store", "s3://chunkvc-test/team-a")
	a.cv("track", "*.tif")
	a.cv("commit", "-m", "v1")
	bare := filepath.Join(t.TempDir(), "origin.git")
	a.git("init", "-q", "--bare", "-b", "main", bare)
	a.git("remote", "add", "origin", bare)
	a.cv("push")

	b := newRunner(t)
	b.env = a.env
	b.cv("clone", bare, "c")
	b.dir = b.path("c")
	if !bytes.Equal(b.read("dem.tif"), v1) {
		t.Fatal("clone from MinIO is not byte-identical")
	}

	var l1 lsChunks
	a.jsonOf(&l1, "ls-chunks", "dem.tif")
	cog("-edit", "900,900,96,96")
	rx0, _, err := srv.Traffic()
	if err != nil {
		t.Fatal(err)
	}
	a.cv("commit", "-m", "v2")
	rx1, _, _ := srv.Traffic()
	var l2 lsChunks
	a.jsonOf(&l2, "ls-chunks", "dem.tif")
	old := map[string]bool{}
	for _, c := range l1.Chunks {
		old[c.Hash] = true
	}
	var changed int64
	for _, c := range l2.Chunks {
		if !old[c.Hash] {
			changed += c.Size
		}
	}
	budget := (changed + layoutSize(t, a, "dem.tif")) * 13 / 10
	t.Logf("v2: changed tiles %d B, layout %d B; uploaded %d B at the server (budget %d) of a %d-byte file",
		changed, layoutSize(t, a, "dem.tif"), rx1-rx0, budget, len(a.read("dem.tif")))
	if up := rx1 - rx0; up <= changed || up > budget {
		t.Fatalf("commit of a one-window edit sent %d bytes to MinIO (changed tiles %d, budget %d)", up, changed, budget)
	}
	a.cv("push")
	_, tx0, _ := srv.Traffic()
	b.cv("pull")
	_, tx1, _ := srv.Traffic()
	t.Logf("pull: MinIO sent %d B (budget %d)", tx1-tx0, budget)
	if down := tx1 - tx0; down < changed || down > budget {
		t.Fatalf("pull downloaded %d bytes (changed tiles %d, budget %d)", down, changed, budget)
	}
	if !bytes.Equal(b.read("dem.tif"), a.read("dem.tif")) {
		t.Fatal("pulled file differs from v2")
	}

	// MinIO down: commit fails in bounded time, HEAD stays.
	head := a.git("rev-parse", "HEAD")
	cog("-edit", "100,100,50,50")
	srv.Stop()
	res := a.run(binary, "commit", "-m", "v3")
	if res.code == 0 || !strings.Contains(res.stderr, "chunkvc-test") {
		t.Fatalf("commit with MinIO stopped: exit %d\n%s", res.code, res.stderr)
	}
	if a.git("rev-parse", "HEAD") != head {
		t.Fatal("HEAD moved although the store was down")
	}
	srv.Restart()
	a.cv("commit", "-m", "v3")
	if res := a.run(binary, "fsck", "--remote", "--verify=full"); res.code != 0 {
		t.Fatalf("fsck --remote: %s", res.stdout)
	}
}
