package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type pushResult struct {
	Commits        int   `json:"commits"`
	Chunks         int   `json:"chunks"`
	ChunksUploaded int   `json:"chunks_uploaded"`
	BytesUploaded  int64 `json:"bytes_uploaded"`
	GitPushed      bool  `json:"git_pushed"`
	Stages         []struct {
		Name     string `json:"name"`
		Items    int64  `json:"items"`
		BytesOut int64  `json:"bytes_out"`
	} `json:"stages"`
}

// The collaboration loop on a shared local store and a bare Git remote:
// offline commit, interrupted push, push, clone, pull, pre-push hook.
func TestPushCloneAndPull(t *testing.T) {
	a := newRunner(t)
	shared := filepath.Join(t.TempDir(), "chunks")
	bare := filepath.Join(t.TempDir(), "origin.git")
	a.git("init", "-q", "--bare", "-b", "main", bare)
	a.git("init", "-q", "-b", "main")
	a.cv("init", "--store", shared)
	a.cv("track", "*.bin")
	data := randomBytes(3<<20, 1)
	a.write("big.bin", data)
	a.cv("commit", "-m", "v1")
	a.git("remote", "add", "origin", bare)
	var p1 pushResult
	a.jsonOf(&p1, "push")
	if !p1.GitPushed || p1.ChunksUploaded != 0 || p1.Chunks == 0 {
		t.Fatalf("first push (chunks already in the shared store): %+v", p1)
	}

	// Clone elsewhere: byte-identical. The shared store is a directory
	// outside the clone, which a clone trusts only when told to.
	b := newRunner(t)
	b.cv("clone", "--trust-store", bare, "clone")
	b.dir = filepath.Join(b.dir, "clone")
	if !bytes.Equal(b.read("big.bin"), data) {
		t.Fatal("clone is not byte-identical")
	}

	// Offline commit: chunks wait in the embedded store.
	copy(data[1<<20:], randomBytes(5000, 2))
	a.write("big.bin", data)
	var c2 commitResult
	a.jsonOf(&c2, "commit", "--offline", "-m", "v2 offline")
	if c2.BytesUploaded == 0 || c2.BytesUploaded > 1<<20 {
		t.Fatalf("offline commit stored %d bytes", c2.BytesUploaded)
	}
	if res := a.run(binary, "fsck", "--remote"); res.code != exitIntegrity {
		t.Fatalf("fsck --remote before push: exit %d\n%s", res.code, res.stdout)
	}
	if res := a.run(binary, "fsck"); res.code != 0 {
		t.Fatalf("fsck (embedded store counts) before push: exit %d\n%s", res.code, res.stdout)
	}
	remoteHead := a.git("--git-dir", bare, "rev-parse", "main")

	// A push that dies after uploading leaves the Git remote untouched.
	a.env = append(a.env, "CHUNKVC_FAILPOINT=push-before-git")
	if res := a.run(binary, "push"); res.code == 0 {
		t.Fatal("push with failpoint succeeded")
	}
	a.env = a.env[:len(a.env)-1]
	if got := a.git("--git-dir", bare, "rev-parse", "main"); got != remoteHead {
		t.Fatal("Git remote advanced although the push stopped")
	}
	var p2 pushResult
	a.jsonOf(&p2, "push")
	if !p2.GitPushed || p2.Commits != 1 {
		t.Fatalf("repeated push: %+v", p2)
	}
	if st := p2.Stages; len(st) != 3 || st[0].Name != "scan" || st[1].Name != "upload" || st[2].Name != "git" ||
		st[0].Items != int64(p2.Chunks) || st[1].BytesOut != p2.BytesUploaded || st[1].Items != int64(p2.ChunksUploaded) {
		t.Errorf("push stages %+v for %+v", st, p2)
	}
	if res := a.run(binary, "fsck", "--remote"); res.code != 0 {
		t.Fatalf("fsck --remote after push: exit %d\n%s", res.code, res.stdout)
	}

	// Pull in the clone: only the changed chunks are read from the store.
	res := b.run(binary, "pull", "--json")
	if res.code != 0 {
		t.Fatalf("pull: %s", res.stderr)
	}
	var co struct {
		Files []struct {
			Path         string `json:"path"`
			Status       string `json:"status"`
			BytesFetched int64  `json:"bytes_fetched"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &co); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.read("big.bin"), data) {
		t.Fatal("pulled file is not v2")
	}
	if len(co.Files) != 1 || co.Files[0].Status != "written" || co.Files[0].BytesFetched > 1<<20 {
		t.Fatalf("pull: %+v", co)
	}

	// With the hook, a plain git push uploads offline chunks first.
	a.cv("install")
	copy(data[2<<20:], randomBytes(5000, 3))
	a.write("big.bin", data)
	a.cv("commit", "--offline", "-m", "v3 offline")
	out := a.run("git", "push", "-q", "origin", "main")
	if out.code != 0 || !strings.Contains(out.stderr, "uploaded") {
		t.Fatalf("git push with hook: exit %d\n%s", out.code, out.stderr)
	}
	if res := a.run(binary, "fsck", "--remote"); res.code != 0 {
		t.Fatalf("fsck --remote after git push: exit %d\n%s", res.code, res.stdout)
	}
	// Lose a chunk from both stores: the hook must stop git push.
	copy(data[0:], randomBytes(5000, 4))
	a.write("big.bin", data)
	var c4 commitResult
	a.jsonOf(&c4, "commit", "--offline", "-m", "v4 offline")
	var ls lsChunks
	a.jsonOf(&ls, "ls-chunks", "big.bin")
	removed := 0
	for _, c := range ls.Chunks {
		if loseObject(t, a.path(".git/chunkvc/store"), c.Hash) {
			removed++
		}
	}
	if removed == 0 {
		t.Fatal("no offline chunk found to remove")
	}
	before := a.git("--git-dir", bare, "rev-parse", "main")
	if out := a.run("git", "push", "-q", "origin", "main"); out.code == 0 {
		t.Fatal("git push succeeded although a chunk is in no store")
	}
	if a.git("--git-dir", bare, "rev-parse", "main") != before {
		t.Fatal("remote advanced past a commit with a missing chunk")
	}
}

// A clone of a local repository that keeps its chunks in its embedded store
// reads them from there.
func TestCloneLocalEmbeddedStore(t *testing.T) {
	a := newRunner(t)
	a.cv("init")
	a.cv("track", "*.bin")
	data := randomBytes(500000, 5)
	a.write("x.bin", data)
	a.cv("commit", "-m", "v1")
	b := newRunner(t)
	b.cv("clone", a.dir, "c")
	if !bytes.Equal(b.read("c/x.bin"), data) {
		t.Fatal("clone of an embedded-store repository differs")
	}
	lz := newRunner(t)
	lz.cv("clone", "--lazy", a.dir, "l")
	if _, err := os.Stat(lz.path("l/x.bin")); !os.IsNotExist(err) {
		t.Fatal("lazy clone wrote a data file")
	}
	lz.dir = lz.path("l")
	if got := lz.cv("cat", "HEAD:x.bin"); got != string(data) {
		t.Fatal("cat in a lazy clone differs")
	}
	// Not materialised is not deleted.
	if st := lz.cv("status"); st != "" {
		t.Fatalf("status in a lazy clone: %q", st)
	}
	if res := lz.run(binary, "commit", "-m", "nothing"); res.code != exitFailure || !strings.Contains(res.stderr, "nothing to commit") {
		t.Fatalf("commit in a lazy clone: exit %d %s", res.code, res.stderr)
	}
	lz.cv("checkout", "--", "x.bin")
	if !bytes.Equal(lz.read("x.bin"), data) {
		t.Fatal("checkout in a lazy clone differs")
	}
}
