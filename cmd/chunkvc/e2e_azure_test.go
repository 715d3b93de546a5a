package main

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
	"github.com/chunkvc/chunkvc/internal/azuritetest"
)

// corpusFile reads a file of the shared corpus where it lies.
func corpusFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(formattest.CorpusDir(t), name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Issue 32 against a real Azurite: init --store az://, commit a COG of
// the corpus, push, clone --lazy, serve the file over HTTP byte for byte,
// pull a new version, fsck --remote, and gc collecting a version reset
// away while both clones still restore theirs. With Azurite stopped a
// commit fails in bounded time naming the store, and HEAD stays.
func TestAzureCommitPushLazyCloneServePull(t *testing.T) {
	srv := azuritetest.Start(t)
	v1 := corpusFile(t, "cogeotiff__rio-tiler__tests__fixtures__cog.tif")
	v2 := corpusFile(t, "cogeotiff__rio-tiler__tests__fixtures__cog_cmap.tif")
	a := newRunner(t)
	a.env = append(a.env, srv.Env()...)
	a.env = append(a.env, "CHUNKVC_AZURE_TIMEOUT=2s", "CHUNKVC_AZURE_RETRY_TIME=4s")
	a.write("cog.tif", v1)
	a.cv("init", "-q", "--store", "az://chunkvc-e2e/team-a")
	a.cv("track", "*.tif")
	a.cv("commit", "-q", "-m", "v1")
	bare := filepath.Join(t.TempDir(), "origin.git")
	a.git("init", "-q", "--bare", "-b", "main", bare)
	a.git("remote", "add", "origin", bare)
	a.cv("push")

	b := newRunner(t)
	b.env = a.env
	b.cv("clone", "--lazy", bare, "c")
	b.dir = b.path("c")
	if _, err := os.Stat(b.path("cog.tif")); err == nil {
		t.Fatal("lazy clone wrote the data file")
	}
	s := startServe(t, b)
	resp, err := http.Get(s.url + "/main/cog.tif")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(got, v1) {
		t.Fatalf("serve of the lazy clone: %s, %d bytes (want %d, equal %v), %v\n%s",
			resp.Status, len(got), len(v1), bytes.Equal(got, v1), err, s.logs)
	}
	if st := s.stats(t); st.BytesFetched == 0 {
		t.Errorf("serve fetched nothing from the store: %+v", st)
	}

	a.write("cog.tif", v2)
	a.cv("commit", "-q", "-m", "v2")
	a.cv("push")
	b.cv("pull")
	if res := b.run(binary, "cat", "HEAD:cog.tif"); res.code != 0 || res.stdout != string(v2) {
		t.Fatalf("cat after pull: exit %d, %d bytes, want %d\n%s", res.code, len(res.stdout), len(v2), res.stderr)
	}
	for _, r := range []*runner{a, b} {
		if res := r.run(binary, "fsck", "--remote", "--verify=full"); res.code != 0 {
			t.Fatalf("fsck --remote in %s: exit %d\n%s%s", r.dir, res.code, res.stdout, res.stderr)
		}
	}

	// Garbage: a version committed, then reset away with its reflog.
	a.write("cog.tif", randomBytes(300<<10, 32))
	a.cv("commit", "-q", "-m", "thrown away")
	a.git("reset", "-q", "--hard", "HEAD~1")
	a.git("reflog", "expire", "--expire=now", "--all")
	a.cv("checkout", "-q", "--force")
	var g gcShared
	a.jsonOf(&g, "gc", "--grace", "0s", "--force")
	deleted := 0
	for _, st := range g.Stores {
		if st.Store == "az://chunkvc-e2e/team-a" {
			deleted = st.Deleted
		}
	}
	if deleted == 0 {
		t.Fatalf("gc: %+v; want the reset-away version deleted from az://chunkvc-e2e/team-a", g)
	}
	t.Logf("gc: %+v", g)
	for _, c := range []struct {
		r    *runner
		rev  string
		want []byte
	}{{a, "HEAD", v2}, {a, "HEAD~1", v1}, {b, "HEAD", v2}, {b, "HEAD~1", v1}} {
		if res := c.r.run(binary, "cat", c.rev+":cog.tif"); res.code != 0 || res.stdout != string(c.want) {
			t.Fatalf("cat %s:cog.tif in %s after gc: exit %d, %d bytes\n%s", c.rev, c.r.dir, res.code, len(res.stdout), res.stderr)
		}
	}

	// Azurite down: commit fails naming the store, HEAD stays.
	head := a.git("rev-parse", "HEAD")
	a.write("cog.tif", v1[:len(v1)/2])
	srv.Stop()
	res := a.run(binary, "commit", "-m", "v3")
	if res.code == 0 || !strings.Contains(res.stderr, "chunkvc-e2e") {
		t.Fatalf("commit with Azurite stopped: exit %d\n%s", res.code, res.stderr)
	}
	if a.git("rev-parse", "HEAD") != head {
		t.Fatal("HEAD moved although the store was down")
	}
	srv.Restart()
	a.cv("commit", "-q", "-m", "v3")
}

// Issue 25's shared-store gc on Azure: two repositories on one container
// prefix, each gc keeping the other's objects.
func TestSharedAzureStoreGC(t *testing.T) {
	srv := azuritetest.Start(t)
	testSharedStoreGC(t, "az://chunkvc-test/shared", srv.Env())
}
