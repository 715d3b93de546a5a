package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
)

// Every corpus file, plus random and empty files, comes back byte for byte
// after commit → delete → checkout.
func TestRoundTripCorpus(t *testing.T) {
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "data/**")
	want := map[string][]byte{
		"data/empty.bin":       {},
		"data/one.bin":         {42},
		"data/random-3M.bin":   randomBytes(3<<20+11, 1),
		"data/sub/dir/odd.tif": randomBytes(5000, 2), // a .tif that is not a TIFF
	}
	for _, f := range formattest.Corpus(t) {
		want["data/corpus/"+f.Name] = f.Data
	}
	for p, b := range want {
		r.write(p, b)
	}
	var res commitResult
	r.jsonOf(&res, "commit", "-m", "corpus")
	if len(res.Files) != len(want) {
		t.Fatalf("commit recorded %d files, want %d", len(res.Files), len(want))
	}
	if err := os.RemoveAll(r.path("data")); err != nil {
		t.Fatal(err)
	}
	r.cv("checkout")
	for p, b := range want {
		t.Run(p, func(t *testing.T) {
			if got := r.read(p); !bytes.Equal(got, b) {
				t.Fatalf("%s: %d bytes back, want %d identical bytes", p, len(got), len(b))
			}
		})
	}
	// cat gives the same bytes as checkout.
	for _, p := range []string{"data/random-3M.bin", "data/empty.bin"} {
		if got := r.cv("cat", "HEAD:"+p); got != string(want[p]) {
			t.Fatalf("cat %s differs", p)
		}
	}
	if out := r.run(binary, "fsck", "--verify=full"); out.code != 0 {
		t.Fatalf("fsck after round trip: exit %d\n%s%s", out.code, out.stdout, out.stderr)
	}
	if st := r.cv("status"); st != "" {
		t.Fatalf("status after checkout not clean:\n%s", st)
	}
	// git itself sees a clean tree: data ignored, manifests committed.
	if st := r.git("status", "--porcelain"); st != "" {
		t.Fatalf("git status not clean:\n%s", st)
	}
}

// The same content in two fresh repositories, one hashed with GOMAXPROCS=1
// and one with many, gives byte-identical manifests.
func TestManifestsDeterministic(t *testing.T) {
	files := map[string][]byte{"a/r.bin": randomBytes(2<<20, 3), "b.bin": randomBytes(100000, 4)}
	for _, f := range formattest.Corpus(t) {
		if len(files) > 40 {
			break
		}
		files["c/"+f.Name] = f.Data
	}
	trees := []map[string]string{}
	for _, procs := range []string{"1", "8"} {
		r := newRunner(t)
		r.env = append(r.env, "GOMAXPROCS="+procs)
		r.cv("init")
		r.cv("track", "*")
		for p, b := range files {
			r.write(p, b)
		}
		r.cv("commit", "-m", "same")
		got := map[string]string{}
		root := r.path(".chunkvc/manifests")
		err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			got[strings.TrimPrefix(p, root)] = string(b)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		trees = append(trees, got)
	}
	if len(trees[0]) != len(files) {
		t.Fatalf("%d manifests for %d files", len(trees[0]), len(files))
	}
	for p, m := range trees[0] {
		if trees[1][p] != m {
			t.Fatalf("manifest %s differs between GOMAXPROCS=1 and 8:\n%s\n---\n%s", p, m, trees[1][p])
		}
	}
}

// A 4 KiB edit in the middle of a 40 MB file stores a few CDC chunks.
func TestSmallEditStoresLittle(t *testing.T) {
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "*.bin")
	data := randomBytes(40<<20, 5)
	r.write("big.bin", data)
	var first commitResult
	r.jsonOf(&first, "commit", "-m", "v1")
	if first.BytesUploaded < int64(len(data)) {
		t.Fatalf("first commit uploaded %d bytes, less than the file", first.BytesUploaded)
	}
	copy(data[20<<20:], randomBytes(4096, 6))
	r.write("big.bin", data)
	var second commitResult
	r.jsonOf(&second, "commit", "-m", "v2")
	t.Logf("4 KiB edit of a 40 MiB file: %d new bytes in %d chunks", second.Files[0].NewBytes, second.Files[0].NewChunks)
	if f := second.Files[0]; f.Status != "modified" || f.NewBytes > 1<<20 {
		t.Fatalf("4 KiB edit: status %s, %d new bytes in %d chunks (want ≤ 1 MiB)", f.Status, f.NewBytes, f.NewChunks)
	}
	// Checkout of v1 reuses the working file's chunks and fetches little.
	var co struct {
		Files []struct {
			ChunksReused  int   `json:"chunks_reused"`
			ChunksFetched int   `json:"chunks_fetched"`
			BytesFetched  int64 `json:"bytes_fetched"`
			InPlace       bool  `json:"in_place"`
			BytesWritten  int64 `json:"bytes_written"`
		} `json:"files"`
	}
	r.jsonOf(&co, "checkout", "HEAD~1", "--", "big.bin")
	if f := co.Files[0]; f.BytesFetched > 1<<20 || f.ChunksReused == 0 {
		t.Fatalf("checkout of v1 fetched %d bytes, reused %d chunks", f.BytesFetched, f.ChunksReused)
	}
	// The two versions differ in a chunk at the same offset: the file is
	// patched, not written whole.
	if f := co.Files[0]; !f.InPlace || f.BytesWritten == 0 || f.BytesWritten > 1<<20 {
		t.Fatalf("checkout of v1: in place %v, %d bytes written", f.InPlace, f.BytesWritten)
	}
	orig := randomBytes(40<<20, 5)
	if !bytes.Equal(r.read("big.bin"), orig) {
		t.Fatal("checkout of HEAD~1 is not byte-identical to v1")
	}
}

// A store that cannot be written makes commit fail; HEAD does not move.
func TestUnwritableStoreKeepsHead(t *testing.T) {
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "*.bin")
	r.write("a.bin", randomBytes(1000, 7))
	r.cv("commit", "-m", "v1")
	head := r.git("rev-parse", "HEAD")
	index := r.read(".git/index")
	// Point the store at a plain file.
	r.write("notadir", []byte("x"))
	cfg := strings.Replace(string(r.read(".chunkvc/config")), "version = 1\n", "version = 1\nstore = notadir\n", 1)
	r.write(".chunkvc/config", []byte(cfg))
	r.write("a.bin", randomBytes(2000, 8))
	res := r.run(binary, "commit", "-m", "v2")
	if res.code == 0 {
		t.Fatal("commit with an unwritable store succeeded")
	}
	if !strings.Contains(res.stderr, "notadir") {
		t.Fatalf("error does not name the store path:\n%s", res.stderr)
	}
	if got := r.git("rev-parse", "HEAD"); got != head {
		t.Fatalf("HEAD moved from %s to %s", head, got)
	}
	if !bytes.Equal(r.read(".git/index"), index) {
		t.Fatal("git index changed by a failed commit")
	}
}

// A chunk store whose objects exist but cannot be written into (read-only
// fan-out dir) also leaves HEAD alone.
func TestFailedPutKeepsHead(t *testing.T) {
	if os.Geteuid() == 0 {
		// root ignores permissions; the plain-file case above covers it.
		t.Log("running as root: using a store path under a file instead")
	}
	r := newRunner(t)
	r.cv("init", "--store", "store-here")
	r.cv("track", "*.bin")
	r.write("a.bin", randomBytes(1000, 9))
	r.cv("commit", "-m", "v1")
	head := r.git("rev-parse", "HEAD")
	if err := os.RemoveAll(r.path("store-here")); err != nil {
		t.Fatal(err)
	}
	r.write("store-here", []byte("now a file"))
	r.write("a.bin", randomBytes(5000, 10))
	if res := r.run(binary, "commit", "-m", "v2"); res.code == 0 || !strings.Contains(res.stderr, "store-here") {
		t.Fatalf("commit: exit %d, stderr %q", res.code, res.stderr)
	}
	if got := r.git("rev-parse", "HEAD"); got != head {
		t.Fatal("HEAD moved")
	}
}

// Two new files that share most of their chunks: commit --json gives each
// shared chunk to the first file by path, whichever was hashed first, so
// per-file new_chunks/new_bytes are the same in every run and add up to
// what was uploaded.
func TestNewChunksCreditedInPathOrder(t *testing.T) {
	shared := randomBytes(12<<20, 21)
	for run := range 3 {
		r := newRunner(t)
		r.cv("init")
		r.cv("track", "*.bin")
		r.write("a.bin", append(bytes.Clone(shared), randomBytes(1<<20, 22)...))
		r.write("b.bin", append(bytes.Clone(shared), randomBytes(1<<20, 23)...))
		var cr commitResult
		r.jsonOf(&cr, "commit", "-m", "two")
		type lsChunks struct {
			Chunks []struct {
				Size int64  `json:"size"`
				Hash string `json:"hash"`
			} `json:"chunks"`
		}
		var la, lb lsChunks
		r.jsonOf(&la, "ls-chunks", "a.bin")
		r.jsonOf(&lb, "ls-chunks", "b.bin")
		inA := map[string]bool{}
		var wantA, wantB int
		var wantABytes, wantBBytes int64
		for _, c := range la.Chunks {
			if !inA[c.Hash] {
				inA[c.Hash] = true
				wantA++
				wantABytes += c.Size
			}
		}
		inB := map[string]bool{}
		for _, c := range lb.Chunks {
			if !inA[c.Hash] && !inB[c.Hash] {
				inB[c.Hash] = true
				wantB++
				wantBBytes += c.Size
			}
		}
		if len(inB) == len(lb.Chunks) {
			t.Fatal("the files share no chunk; the test proves nothing")
		}
		got := map[string][2]int64{}
		for _, f := range cr.Files {
			got[f.Path] = [2]int64{int64(f.NewChunks), f.NewBytes}
		}
		if got["a.bin"] != [2]int64{int64(wantA), wantABytes} || got["b.bin"] != [2]int64{int64(wantB), wantBBytes} {
			t.Fatalf("run %d: new chunks/bytes a.bin %v, b.bin %v; want %v, %v", run, got["a.bin"], got["b.bin"],
				[2]int64{int64(wantA), wantABytes}, [2]int64{int64(wantB), wantBBytes})
		}
		if sum := int64(wantA + wantB); cr.ChunksUploaded != sum+2 { // + two layout blobs
			t.Errorf("run %d: %d chunks uploaded, files credited %d (+2 layouts)", run, cr.ChunksUploaded, sum)
		}
	}
}
