package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
)

// smallStore is a Zarr v2 store written by hand: a group, an array t of
// 4×4 uint8 in 2×2 chunks (chunk 1.1 absent: the fill value) and a README
// large enough to be kept as chunk pieces the layout blob names.
type smallStore map[string][]byte

func newSmallStore(seed int64) smallStore {
	return smallStore{
		".zgroup": []byte(`{"zarr_format": 2}`),
		"t/.zarray": []byte(`{"zarr_format": 2, "shape": [4, 4], "chunks": [2, 2], "dtype": "|u1", "compressor": null,
 "fill_value": 0, "order": "C", "filters": null}`),
		"t/.zattrs": []byte(`{"_ARRAY_DIMENSIONS": ["y", "x"]}`),
		"t/0.0":     randomBytes(4, seed),
		"t/0.1":     randomBytes(4, seed+1),
		"t/1.0":     randomBytes(4, seed+2),
		"README":    randomBytes(100<<10, seed+3),
	}
}

func (s smallStore) write(t *testing.T, r *runner, dir string) {
	t.Helper()
	if err := os.RemoveAll(r.path(dir)); err != nil {
		t.Fatal(err)
	}
	for p, b := range s {
		r.write(dir+"/"+p, b)
	}
}

// requireMembers requires cat REV:DIR/<member> to give every member's
// bytes.
func requireMembers(t *testing.T, r *runner, rev, dir string, s smallStore) {
	t.Helper()
	for p, want := range s {
		if got := r.cv("cat", rev+":"+dir+"/"+p); got != string(want) {
			t.Fatalf("cat %s:%s/%s: %d bytes differ from the %d committed", rev, dir, p, len(got), len(want))
		}
	}
}

// fsckClean requires fsck (with args) to exit 0 with no problem.
func fsckClean(t *testing.T, r *runner, args ...string) {
	t.Helper()
	res := r.run(binary, append([]string{"fsck"}, args...)...)
	if res.code != 0 || !strings.Contains(res.stdout+res.stderr, " 0 problems") {
		t.Fatalf("fsck %v: exit %d\n%s%s", args, res.code, res.stdout, res.stderr)
	}
}

// fsck reads a dataset's layout blob as a dataset's, and gc keeps every
// chunk and layout blob of every committed version of a dataset while it
// deletes garbage; cat gives each version's members after it.
func TestDatasetFsckAndGC(t *testing.T) {
	r := newRunner(t)
	r.cv("init")
	v1 := newSmallStore(1)
	v1.write(t, r, "cube.zarr")
	r.cv("track", "cube.zarr")
	r.cv("commit", "-m", "v1")
	rev1 := strings.TrimSpace(r.git("rev-parse", "HEAD"))
	v2 := newSmallStore(1)
	v2["t/0.1"], v2["README"] = randomBytes(4, 20), randomBytes(100<<10, 21)
	v2.write(t, r, "cube.zarr")
	r.cv("commit", "-m", "v2")
	fsckClean(t, r, "--verify=full")

	r.cv("track", "*.bin")
	r.write("x.bin", randomBytes(300000, 30))
	r.cv("commit", "-m", "v3 (to be thrown away)")
	r.git("reset", "-q", "--hard", "HEAD~1")
	before := storeObjects(t, r)
	var g gcResult
	r.jsonOf(&g, "gc", "--grace", "0s")
	if g.Stores[0].Deleted == 0 || storeObjects(t, r) != before-g.Stores[0].Deleted {
		t.Fatalf("gc deleted no garbage: %+v", g)
	}
	fsckClean(t, r, "--verify=full")
	requireMembers(t, r, rev1, "cube.zarr", v1)
	requireMembers(t, r, "HEAD", "cube.zarr", v2)

	// A README piece of v1, which only v1's layout blob names, lost:
	// fsck names it.
	var ls lsChunks
	r.jsonOf(&ls, "ls-chunks", rev1+":cube.zarr")
	lost := ""
	for _, c := range ls.Chunks {
		if strings.HasPrefix(c.Key, "~f/") && loseObject(t, r.path(".git/chunkvc/store"), c.Hash) {
			lost = c.Key
		}
	}
	res := r.run(binary, "fsck")
	if lost == "" || res.code != exitIntegrity || !strings.Contains(res.stdout, lost) {
		t.Fatalf("fsck after losing %q: exit %d\n%s", lost, res.code, res.stdout)
	}
}

// push moves a dataset's chunks and layout blobs (committed offline) to
// the shared store; a lazy clone finds every one there (fsck --remote) and
// reads any version's members from it.
func TestDatasetPushAndLazyClone(t *testing.T) {
	a := newRunner(t)
	shared := filepath.Join(t.TempDir(), "chunks")
	bare := filepath.Join(t.TempDir(), "origin.git")
	a.git("init", "-q", "--bare", "-b", "main", bare)
	a.git("init", "-q", "-b", "main")
	a.cv("init", "--store", shared)
	a.git("remote", "add", "origin", bare)
	v1 := newSmallStore(1)
	v1.write(t, a, "cube.zarr")
	a.cv("track", "cube.zarr")
	a.cv("commit", "--offline", "-m", "v1")
	rev1 := strings.TrimSpace(a.git("rev-parse", "HEAD"))
	if res := a.run(binary, "fsck", "--remote"); res.code != exitIntegrity {
		t.Fatalf("fsck --remote before push: exit %d\n%s", res.code, res.stdout)
	}
	var p1 pushResult
	a.jsonOf(&p1, "push")
	// 3 chunk files, a README piece and the layout blob.
	if !p1.GitPushed || p1.ChunksUploaded != 5 {
		t.Fatalf("first push: %+v", p1)
	}
	fsckClean(t, a, "--remote", "--verify=full")

	v2 := newSmallStore(1)
	v2["t/1.1"] = randomBytes(4, 40) // a chunk that was the fill value
	v2.write(t, a, "cube.zarr")
	a.cv("commit", "--offline", "-m", "v2")
	var p2 pushResult
	a.jsonOf(&p2, "push")
	// The new chunk alone: a chunk file is not in the layout blob.
	if !p2.GitPushed || p2.ChunksUploaded != 1 {
		t.Fatalf("second push: %+v", p2)
	}

	b := newRunner(t)
	b.cv("clone", "--lazy", "--trust-store", bare, "c")
	b.dir = b.path("c")
	fsckClean(t, b, "--remote", "--verify=full")
	requireMembers(t, b, rev1, "cube.zarr", v1)
	requireMembers(t, b, "HEAD", "cube.zarr", v2)
	if res := b.run(binary, "cat", rev1+":cube.zarr/t/1.1"); res.code == 0 || !strings.Contains(res.stderr, "not a member") {
		t.Fatalf("cat of a chunk v1 lacks: exit %d %s", res.code, res.stderr)
	}
	if got := b.cv("ls-chunks", rev1+":cube.zarr/t"); strings.Count(got, "\n") != 3 || !strings.HasPrefix(got, "t/c/0/0\t4\t") {
		t.Fatalf("ls-chunks of v1's array t:\n%s", got)
	}
	if !bytes.Equal([]byte(b.cv("cat", "HEAD:cube.zarr/t/.zarray")), v2["t/.zarray"]) {
		t.Fatal("cat of .zarray")
	}
	// serve gives a member kept as chunk pieces from the lazy clone.
	formattest.RequireTool(t, "curl")
	s := startServe(t, b)
	if code, _, body := curl(t, s.url+"/"+rev1+"/cube.zarr/README"); code != 200 || !bytes.Equal(body, v1["README"]) {
		t.Fatalf("README at v1 over serve: %d, %d bytes\n%s", code, len(body), s.logs)
	}
	if st := s.stats(t); st.ChunksFetched != 1 {
		t.Fatalf("README fetched %d chunks, want its one piece", st.ChunksFetched)
	}
}
