package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
	"github.com/chunkvc/chunkvc/internal/gcstest"
)

// A repository whose store is a GCS bucket (the fake-gcs-server emulator):
// commit a COG of the shared corpus, push, clone --lazy and serve the file
// over HTTP from chunks read out of the bucket, pull a second commit into
// a full clone, fsck --remote, and gc away an abandoned commit's chunks
// without touching what is published.
func TestGCSCommitPushCloneServePullGC(t *testing.T) {
	srv := gcstest.Start(t)
	corpus := formattest.CorpusDir(t)
	readCorpus := func(name string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(corpus, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	v1 := readCorpus("cogeotiff__rio-cogeo__tests__fixtures__image_2000px.tif")
	v2 := readCorpus("cogeotiff__rio-cogeo__tests__fixtures__image_rgb_mask.tif")

	a := newRunner(t)
	a.env = append(a.env, srv.Env()...)
	a.env = append(a.env, "CHUNKVC_GCS_TIMEOUT=2s", "CHUNKVC_GCS_RETRY_TIME=4s")
	a.write("cog.tif", v1)
	a.cv("init", "--store", "gs://chunkvc-e2e/team-a")
	a.cv("track", "*.tif")
	a.cv("commit", "-q", "-m", "v1")
	bare := filepath.Join(t.TempDir(), "origin.git")
	a.git("init", "-q", "--bare", "-b", "main", bare)
	a.git("remote", "add", "origin", bare)
	a.cv("push")

	// A lazy clone serves the file from the bucket, byte for byte.
	lz := newRunner(t)
	lz.env = a.env
	lz.cv("clone", "--lazy", bare, "l")
	lz.dir = lz.path("l")
	if _, err := os.Stat(lz.path("cog.tif")); !os.IsNotExist(err) {
		t.Fatal("lazy clone wrote the data file")
	}
	s := startServe(t, lz)
	code, _, body := curl(t, s.url+"/main/cog.tif")
	if code != 200 || !bytes.Equal(body, v1) {
		t.Fatalf("serve of a lazy GCS clone: %d, %d bytes (want 200 and the %d bytes committed)", code, len(body), len(v1))
	}
	if st := s.stats(t); st.ChunksFetched == 0 {
		t.Errorf("serve fetched no chunks from the bucket: %+v", st)
	}
	code, _, body = curl(t, "-r", "1000-1999", s.url+"/main/cog.tif")
	if code != 206 || !bytes.Equal(body, v1[1000:2000]) {
		t.Fatalf("ranged serve: %d, %d bytes", code, len(body))
	}

	// A full clone pulls the next commit.
	b := newRunner(t)
	b.env = a.env
	b.cv("clone", bare, "c")
	b.dir = b.path("c")
	if !bytes.Equal(b.read("cog.tif"), v1) {
		t.Fatal("clone from GCS is not byte-identical")
	}
	a.write("mask.tif", v2)
	a.cv("commit", "-q", "-m", "v2")
	a.cv("push")
	b.cv("pull")
	if !bytes.Equal(b.read("mask.tif"), v2) || !bytes.Equal(b.read("cog.tif"), v1) {
		t.Fatal("pulled files differ from what was committed")
	}
	if res := a.run(binary, "fsck", "--remote", "--verify=full"); res.code != 0 {
		t.Fatalf("fsck --remote: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}

	// An abandoned commit's chunks are garbage; the published ones stay.
	a.write("cog.tif", readCorpus("GeoTIFF__test-data__files__wind_direction.tif"))
	a.cv("commit", "-q", "-m", "v3 (to be thrown away)")
	a.git("reset", "-q", "--hard", "HEAD~1")
	a.cv("checkout", "--force")
	var g gcResult
	a.jsonOf(&g, "gc", "--grace", "0s")
	if len(g.Stores) == 0 || g.Stores[0].Deleted == 0 {
		t.Fatalf("gc of a GCS store deleted nothing: %+v", g)
	}
	if res := a.run(binary, "fsck", "--remote", "--verify=full"); res.code != 0 {
		t.Fatalf("fsck --remote after gc: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	c := newRunner(t)
	c.env = a.env
	c.cv("clone", bare, "c")
	if !bytes.Equal(c.read("c/cog.tif"), v1) || !bytes.Equal(c.read("c/mask.tif"), v2) {
		t.Fatal("a clone after gc differs from what was published")
	}
}
