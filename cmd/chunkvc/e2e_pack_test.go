package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// storeBytes is the apparent size of every file under the embedded store.
func storeBytes(t *testing.T, r *runner) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(r.path(".git/chunkvc/store"), func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
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

// csvLike returns n lines of numbers: text that compresses, like a CSV.
func csvLike(n int) []byte {
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "%d,%d.%04d,%d.%04d,station-%05d,%d\n", i, 10+i%80, (i*7919)%10000, 40+i%9, (i*104729)%10000, i%977, (i*31)%1000)
	}
	return b.Bytes()
}

// A small edit is stored as a zstd delta against the previous version of
// its chunk, the text compressed; both versions read back bit for bit, and
// gc of the base keeps the delta's version readable.
func TestPackedDeltasRoundTripAndSurviveGC(t *testing.T) {
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "*.csv")
	v1 := csvLike(60000)
	r.write("points.csv", v1)
	var c1 commitResult
	r.jsonOf(&c1, "commit", "-m", "v1")
	stored1 := storeBytes(t, r)
	if stored1 >= int64(len(v1))/2 {
		t.Errorf("v1: %d bytes of text stored in %d bytes; want it compressed", len(v1), stored1)
	}

	v2 := bytes.Clone(v1)
	at := bytes.Index(v2[len(v2)/2:], []byte("\n")) + len(v2)/2 + 1
	copy(v2[at:], "99999,12.345")
	r.write("points.csv", v2)
	var c2 commitResult
	r.jsonOf(&c2, "commit", "-m", "v2")
	grew := storeBytes(t, r) - stored1
	t.Logf("one-line edit: %d raw bytes of new chunks, store grew %d bytes", c2.BytesUploaded, grew)
	if c2.BytesUploaded == 0 || grew*20 > c2.BytesUploaded {
		t.Errorf("one-line edit: %d raw bytes of new chunks stored in %d bytes; want a delta (< 1/20)", c2.BytesUploaded, grew)
	}
	for rev, want := range map[string][]byte{c1.Commit: v1, c2.Commit: v2} {
		if got := r.cv("cat", rev+":points.csv"); got != string(want) {
			t.Fatalf("cat %.8s: bytes differ", rev)
		}
	}

	// Forget v1: its chunks are garbage, among them the delta's base.
	branch := strings.TrimSpace(r.git("branch", "--show-current"))
	r.git("checkout", "-q", "--orphan", "fresh")
	r.git("commit", "-q", "-m", "v2 alone")
	r.git("branch", "-q", "-D", branch)
	r.git("reflog", "expire", "--expire=now", "--all")
	var g gcResult
	r.jsonOf(&g, "gc", "--grace", "0s")
	if g.Stores[0].Deleted == 0 {
		t.Fatalf("gc deleted nothing after v1 was dropped: %+v", g)
	}
	if res := r.run(binary, "fsck", "--verify=full"); res.code != 0 {
		t.Fatalf("fsck after gc: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if got := r.cv("cat", "HEAD:points.csv"); got != string(v2) {
		t.Fatal("v2 does not read back after gc removed its delta base")
	}
}

// One pack per commit piles up; gc merges them, and every version still
// restores bit for bit.
func TestGCMergesSmallPacks(t *testing.T) {
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "*.csv")
	data := csvLike(20000)
	versions := map[string][]byte{}
	for i := 0; i < 34; i++ {
		copy(data[len(data)/34*i:], fmt.Sprintf("%05d", i))
		r.write("points.csv", data)
		var c commitResult
		r.jsonOf(&c, "commit", "-m", fmt.Sprint("v", i))
		versions[c.Commit] = bytes.Clone(data)
	}
	var g struct {
		Stores []struct {
			PacksMerged int `json:"packs_merged"`
		} `json:"stores"`
	}
	r.jsonOf(&g, "gc", "--grace", "0s")
	if g.Stores[0].PacksMerged < 32 {
		t.Fatalf("gc merged %d packs after 34 commits", g.Stores[0].PacksMerged)
	}
	idx, _ := filepath.Glob(r.path(".git/chunkvc/store/packs/*.idx"))
	if len(idx) > 3 {
		t.Errorf("%d pack indexes after gc merged %d packs", len(idx), g.Stores[0].PacksMerged)
	}
	if res := r.run(binary, "fsck", "--verify=full"); res.code != 0 {
		t.Fatalf("fsck after merging packs: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	for c, want := range versions {
		if got := r.cv("cat", c+":points.csv"); got != string(want) {
			t.Fatalf("commit %.8s does not restore after the merge", c)
		}
	}
}

// A pack whose index is gone or garbage makes a damaged store: reads of
// its objects fail with the integrity status, naming the pack, and cat
// writes nothing of a file it cannot give whole, though the file's layout
// and first chunks are in a sound pack.
func TestDamagedPackIndex(t *testing.T) {
	r := newRunner(t)
	r.cv("init")
	r.cv("track", "*.bin")
	packs := func() map[string]bool {
		ents, err := filepath.Glob(r.path(".git/chunkvc/store/packs/*.idx"))
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]bool{}
		for _, e := range ents {
			m[e] = true
		}
		return m
	}
	a, b := randomBytes(300000, 21), randomBytes(3000000, 22)
	r.write("a.bin", a)
	r.cv("commit", "-m", "a")
	before := packs()
	r.write("b.bin", b)
	r.cv("commit", "-m", "b")
	var idx string // the pack of b's chunks
	for p := range packs() {
		if !before[p] {
			idx = p
		}
	}
	// c's first chunks are a's, its last ones b's (content-defined
	// chunking finds b's boundaries again), its layout in a third pack.
	c := append(bytes.Clone(a), b...)
	r.write("c.bin", c)
	r.cv("commit", "-m", "c")
	good := r.read(strings.TrimPrefix(idx, r.dir+"/"))
	pack := strings.TrimSuffix(filepath.Base(idx), ".idx")

	for _, damage := range []struct {
		name string
		do   func() error
	}{
		{"index deleted", func() error { return os.Remove(idx) }},
		{"index garbage", func() error { return os.WriteFile(idx, randomBytes(len(good), 23), 0o644) }},
	} {
		t.Run(damage.name, func(t *testing.T) {
			os.Chmod(idx, 0o644)
			if err := damage.do(); err != nil {
				t.Fatal(err)
			}
			defer os.WriteFile(idx, good, 0o444)
			res := r.run(binary, "cat", "HEAD:c.bin")
			if res.code != exitIntegrity || len(res.stdout) != 0 || !strings.Contains(res.stderr, pack) {
				t.Fatalf("cat: exit %d, %d bytes on stdout; want %d, none, naming %s\n%s", res.code, len(res.stdout), exitIntegrity, pack, res.stderr)
			}
			os.Remove(r.path("c.bin"))
			res = r.run(binary, "checkout", "--", "c.bin")
			if res.code != exitIntegrity || !strings.Contains(res.stderr, pack) {
				t.Fatalf("checkout: exit %d, want %d naming %s\n%s", res.code, exitIntegrity, pack, res.stderr)
			}
			res = r.run(binary, "fsck")
			if res.code != exitIntegrity || !strings.Contains(res.stdout, pack) {
				t.Fatalf("fsck: exit %d, want %d naming %s\n%s", res.code, exitIntegrity, pack, res.stdout)
			}
			if got := r.run(binary, "cat", "HEAD:a.bin"); got.code != 0 || got.stdout != string(a) {
				t.Fatalf("cat of a file in sound packs: exit %d\n%s", got.code, got.stderr)
			}
		})
	}
	r.cv("checkout", "--", "c.bin")
	if !bytes.Equal(r.read("c.bin"), c) {
		t.Fatal("c.bin differs once the index is back")
	}
}
