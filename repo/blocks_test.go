package repo

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/zeebo/blake3"
)

// TestBlockCacheDigests commits versions of a 5 MiB file that keep, shift
// or extend its bytes, and checks every committed digest against BLAKE3 of
// the file, and how many blocks each commit took from the cache.
func TestBlockCacheDigests(t *testing.T) {
	v1 := randomData(5<<20+777, 7)
	r := testRepo(t, v1)
	path := filepath.Join(r.Root, "sub", "x.bin")
	reused := -1
	testHookBlocksReused = func(_ string, n int) { reused = n }
	t.Cleanup(func() { testHookBlocksReused = nil })
	mtime := time.Now().Add(time.Hour)

	commit := func(name string, data []byte) hashing.ID {
		t.Helper()
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		mtime = mtime.Add(time.Minute) // a new mtime even if the bytes and size are the same
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		reused = -1
		// A touched file is re-hashed and found unchanged.
		if _, err := r.Commit(context.Background(), CommitOptions{Message: name}); err != nil && !(name == "touch" && errors.Is(err, ErrNothingToCommit)) {
			t.Fatalf("%s: %v", name, err)
		}
		m, err := r.Manifest("", "sub/x.bin")
		if err != nil {
			t.Fatal(err)
		}
		if want := hashing.ID(blake3.Sum256(data)); m.Digest != want {
			t.Fatalf("%s: committed digest %s, BLAKE3 of the file %s", name, m.Digest.Short(), want.Short())
		}
		if _, err := os.Stat(r.blocksPath(m.Digest)); err != nil {
			t.Fatalf("%s: no block cache entry: %v", name, err)
		}
		return m.Digest
	}
	blocks := func(b []byte) int { return (len(b) + hashing.BlockLen - 1) / hashing.BlockLen }

	// Same bytes, new mtime: every block from the cache.
	d1 := hashing.ID(blake3.Sum256(v1))
	commit("touch", v1)
	if reused != blocks(v1) {
		t.Errorf("touch: %d of %d blocks reused", reused, blocks(v1))
	}

	// One byte changed in place: only the blocks its chunk spans are hashed.
	v2 := bytes.Clone(v1)
	v2[3<<20+100] ^= 1
	d2 := commit("in place", v2)
	if reused < blocks(v2)-2 || reused == blocks(v2) {
		t.Errorf("one byte changed in place: %d of %d blocks reused", reused, blocks(v2))
	}
	if _, err := os.Stat(r.blocksPath(d1)); err == nil {
		t.Errorf("entry of the replaced version %s left behind", d1.Short())
	}

	// 1000 bytes inserted in block 1: everything after moved.
	v3 := append(append(bytes.Clone(v2[:1<<20+5000]), randomData(1000, 8)...), v2[1<<20+5000:]...)
	commit("insert", v3)
	if reused > 1 {
		t.Errorf("bytes inserted in block 1: %d blocks reused", reused)
	}

	// Appended: the old short last block is now whole and differs.
	v4 := append(bytes.Clone(v3), randomData(1<<20, 9)...)
	d4 := commit("append", v4)
	if reused < blocks(v3)-2 || reused > blocks(v3)-1 {
		t.Errorf("append: %d blocks reused, want %d or %d", reused, blocks(v3)-2, blocks(v3)-1)
	}

	// A damaged entry is not used.
	entry := r.blocksPath(d4)
	raw, err := os.ReadFile(entry)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(blocksMagic)+20] ^= 1
	if err := os.WriteFile(entry, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	v5 := bytes.Clone(v4)
	v5[100] ^= 1
	d5 := commit("damaged entry", v5)
	if reused != -1 {
		t.Errorf("damaged entry: %d blocks reused", reused)
	}

	// An entry whose checksum is right but whose chaining values do not
	// give its digest (a bug, another tool) is not used either.
	raw, err = os.ReadFile(r.blocksPath(d5))
	if err != nil {
		t.Fatal(err)
	}
	s, err := decodeBlocks(raw, int64(len(v5)))
	if err != nil {
		t.Fatal(err)
	}
	s.cvs[2][0] ^= 1
	if err := os.WriteFile(r.blocksPath(d5), encodeBlocks(int64(len(v5)), s), 0o644); err != nil {
		t.Fatal(err)
	}
	v6 := bytes.Clone(v5)
	v6[len(v6)-1] ^= 1
	commit("wrong chaining value", v6)
	if reused != -1 {
		t.Errorf("entry with a wrong chaining value: %d blocks reused", reused)
	}
	_ = d2

	// gc keeps the entry of the working file's version and removes others.
	orphan := r.blocksPath(hashing.Sum([]byte("a version no file has")))
	if err := os.WriteFile(orphan, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.GC(context.Background(), GCOptions{NoFetch: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(orphan); err == nil {
		t.Error("gc left an orphan block cache entry")
	}
	if _, err := os.Stat(r.blocksPath(hashing.ID(blake3.Sum256(v6)))); err != nil {
		t.Errorf("gc removed the working file's entry: %v", err)
	}
}

func TestBlockPrints(t *testing.T) {
	const B = hashing.BlockLen
	id := func(b byte) hashing.ID { return hashing.ID{b} }
	pieces := []piece{{0, 100, id(1)}, {100, B - 100, id(2)}, {B, B + 10, id(3)}, {2*B + 10, 50, id(4)}}
	size := int64(2*B + 60)
	p := blockPrints(pieces, size)
	if len(p) != 3 {
		t.Fatalf("%d prints for 3 blocks", len(p))
	}
	for i, fp := range p {
		if fp == (fingerprint{}) {
			t.Errorf("block %d: no print", i)
		}
	}
	// A change in a piece that spans blocks 1 and 2 changes both prints,
	// and only them.
	changed := append([]piece(nil), pieces...)
	changed[2].id = id(9)
	q := blockPrints(changed, size)
	if q[0] != p[0] || q[1] == p[1] || q[2] == p[2] {
		t.Errorf("piece over blocks 1-2 changed: prints equal %v %v %v", q[0] == p[0], q[1] == p[1], q[2] == p[2])
	}
	// A gap leaves the block without a print.
	gap := []piece{{0, 100, id(1)}, {200, 2*B - 140, id(2)}}
	if g := blockPrints(gap, size); g[0] != (fingerprint{}) || g[1] == (fingerprint{}) {
		t.Errorf("gap in block 0: prints %x %x", g[0], g[1])
	}
}

func FuzzDecodeBlocks(f *testing.F) {
	s := &blockSet{prints: make([]fingerprint, 3), cvs: make([]hashing.CV, 3)}
	s.prints[1][0], s.cvs[2][5] = 1, 2
	f.Add(encodeBlocks(2<<20+5, s), int64(2<<20+5))
	f.Add([]byte(blocksMagic), int64(0))
	f.Fuzz(func(t *testing.T, data []byte, size int64) {
		s, err := decodeBlocks(data, size)
		if err != nil {
			return
		}
		if len(s.cvs) != len(s.prints) || int64(len(s.cvs)) != (size+hashing.BlockLen-1)/hashing.BlockLen {
			t.Fatalf("decoded %d CVs and %d prints for size %d", len(s.cvs), len(s.prints), size)
		}
		if !bytes.Equal(encodeBlocks(size, s), data) {
			t.Fatal("decoded entry does not encode to its bytes")
		}
	})
}
