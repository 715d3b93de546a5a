package repo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/formats/parquet"
	"github.com/chunkvc/chunkvc/formats/parquet/pqgen"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/repo/internal/blockcache"
	"github.com/zeebo/blake3"
)

// blockCommits commits versions of the tracked file rel in r, checking
// each committed digest against BLAKE3 of the bytes and returning how many
// blocks the commit took from the block cache (-1: no cache entry used).
type blockCommits struct {
	t      *testing.T
	r      *Repo
	rel    string
	mtime  time.Time
	reused int
	known  int // pieces the commit took from the quick table (-1: no entry)
}

func newBlockCommits(t *testing.T, r *Repo, rel string) *blockCommits {
	c := &blockCommits{t: t, r: r, rel: rel, mtime: time.Now().Add(-time.Hour), reused: -1, known: -1}
	testHookBlocksReused = func(_ string, n int) { c.reused = n }
	testHookPiecesKnown = func(_ string, n int) { c.known = n }
	t.Cleanup(func() { testHookBlocksReused, testHookPiecesKnown = nil, nil })
	return c
}

// commit writes data, commits it at once (inside the racy window: a
// commit's entry comes from one read, so it is kept all the same) and
// returns the committed digest and the blocks reused.
func (c *blockCommits) commit(name string, data []byte) (hashing.ID, int) {
	t := c.t
	t.Helper()
	path := filepath.Join(c.r.Root, filepath.FromSlash(c.rel))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	c.mtime = c.mtime.Add(time.Minute) // a new mtime even if the bytes and size are the same
	if err := os.Chtimes(path, c.mtime, c.mtime); err != nil {
		t.Fatal(err)
	}
	c.reused, c.known = -1, -1
	// A touched file is re-hashed and found unchanged.
	if _, err := c.r.Commit(context.Background(), CommitOptions{Message: name}); err != nil && !errors.Is(err, ErrNothingToCommit) {
		t.Fatalf("%s: %v", name, err)
	}
	m, err := c.r.Manifest("", c.rel)
	if err != nil {
		t.Fatal(err)
	}
	if want := hashing.ID(blake3.Sum256(data)); m.Digest != want {
		t.Fatalf("%s: committed digest %s, BLAKE3 of the file %s", name, m.Digest.Short(), want.Short())
	}
	// Chunk IDs taken from the quick table must be those of the bytes:
	// the manifest of the file hashed afresh, without any cache, is the same.
	fresh, err := c.r.chunkFile(context.Background(), c.rel, nil, version{}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if enc, err := m.Encode(); err != nil || !bytes.Equal(enc, fresh.encoded) {
		t.Fatalf("%s: committed manifest differs from the file's hashed afresh (%v)", name, err)
	}
	if _, err := os.Stat(c.r.blocksPath(m.Digest)); err != nil {
		t.Fatalf("%s: no block cache entry: %v", name, err)
	}
	return m.Digest, c.reused
}

// blocksPath is the block cache entry of the version whose digest is
// digest.
func (r *Repo) blocksPath(digest hashing.ID) string {
	return filepath.Join(r.gitDir(), filepath.FromSlash(blockcache.Rel(digest)))
}

func blocksOf(b []byte) int { return (len(b) + hashing.BlockLen - 1) / hashing.BlockLen }

// TestBlockCacheDigests commits versions of a 5 MiB file that keep, shift,
// extend or cut its bytes, and checks every committed digest against BLAKE3
// of the file, and how many blocks each commit took from the cache.
func TestBlockCacheDigests(t *testing.T) {
	const B = hashing.BlockLen
	v1 := randomData(5*B+777, 7)
	r := testRepo(t, v1)
	c := newBlockCommits(t, r, "sub/x.bin")

	// Same bytes, new mtime: hashed again, every block from the cache.
	d1 := hashing.ID(blake3.Sum256(v1))
	if _, n := c.commit("touch", v1); n != blocksOf(v1) {
		t.Errorf("touch: %d of %d blocks reused", n, blocksOf(v1))
	}

	// One byte changed in place: only the blocks its chunk spans are hashed.
	v2 := bytes.Clone(v1)
	v2[3*B+100] ^= 1
	if _, n := c.commit("in place", v2); n < blocksOf(v2)-2 || n == blocksOf(v2) {
		t.Errorf("one byte changed in place: %d of %d blocks reused", n, blocksOf(v2))
	}
	if _, err := os.Stat(r.blocksPath(d1)); err == nil {
		t.Errorf("entry of the replaced version %s left behind", d1.Short())
	}

	// 1000 bytes inserted in block 1: everything after moved.
	v3 := append(append(bytes.Clone(v2[:B+5000]), randomData(1000, 8)...), v2[B+5000:]...)
	if _, n := c.commit("insert", v3); n > 1 {
		t.Errorf("bytes inserted in block 1: %d blocks reused", n)
	}

	// Appended: the old short last block is now whole and differs.
	v4 := append(bytes.Clone(v3), randomData(B, 9)...)
	if _, n := c.commit("append", v4); n < blocksOf(v3)-2 || n > blocksOf(v3)-1 {
		t.Errorf("append: %d blocks reused, want %d or %d", n, blocksOf(v3)-2, blocksOf(v3)-1)
	}

	// Cut to a whole number of blocks, then grown from there, then cut so
	// that a whole block becomes a short last one.
	c.commit("cut to 4 MiB", v4[:4*B])
	c.commit("grown from 4 MiB", v4[:6*B+10])
	c.commit("cut into block 3", v4[:3*B+10])

	v5 := bytes.Clone(v4[:3*B+10])

	// Every blockcache.MaxGeneration-th commit computes every chaining value afresh.
	fresh := 0
	for i := range 2*blockcache.MaxGeneration + 1 {
		v5[B+i] ^= 1
		if _, n := c.commit(fmt.Sprintf("generation %d", i), v5); n == -1 {
			fresh++
		}
	}
	if fresh != 2 {
		t.Errorf("%d of %d commits without reuse, want 2", fresh, 2*blockcache.MaxGeneration+1)
	}

	// A damaged entry is not used.
	d, _ := c.commit("settle", v5)
	raw, err := os.ReadFile(r.blocksPath(d))
	if err != nil {
		t.Fatal(err)
	}
	raw[len("chunkvc-blocks 2\n")+20] ^= 1 // in block 0's fingerprint
	if err := os.WriteFile(r.blocksPath(d), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	v5[100] ^= 1
	d, n := c.commit("damaged entry", v5)
	if n != -1 {
		t.Errorf("damaged entry: %d blocks reused", n)
	}

	// An entry whose checksum is right but whose chaining values do not
	// give its digest (a bug, another tool) is not used either.
	s := r.loadBlocks(d, int64(len(v5)))
	if s == nil {
		t.Fatalf("commit after a damaged entry: no usable entry for %s", d.Short())
	}
	s.CVs[2][0] ^= 1
	r.saveBlocks(d, int64(len(v5)), s)
	v5[len(v5)-1] ^= 1
	d, n = c.commit("wrong chaining value", v5)
	if n != -1 {
		t.Errorf("entry with a wrong chaining value: %d blocks reused", n)
	}
	if r.loadBlocks(d, int64(len(v5))) == nil {
		t.Errorf("commit after an entry with a wrong chaining value: no usable entry for %s", d.Short())
	}

	// checkoutEdit checks out rev (removing the working file first when
	// fresh), checks that the checkout recorded rev's blocks, then flips a
	// byte at off in place and commits; it returns the blocks reused.
	checkoutEdit := func(rev string, fresh bool, off int) ([]byte, int) {
		t.Helper()
		old, err := r.Manifest(rev, "sub/x.bin")
		if err != nil {
			t.Fatal(err)
		}
		_ = os.Remove(r.blocksPath(old.Digest))
		if fresh {
			if err := os.Remove(filepath.Join(r.Root, "sub", "x.bin")); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := r.Checkout(context.Background(), CheckoutOptions{Rev: rev, Paths: []string{"sub/x.bin"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(r.blocksPath(old.Digest)); err != nil {
			t.Fatalf("checkout of %s (fresh %v) recorded no blocks: %v", rev, fresh, err)
		}
		data, err := os.ReadFile(filepath.Join(r.Root, "sub", "x.bin"))
		if err != nil {
			t.Fatal(err)
		}
		data[off] ^= 1
		_, n := c.commit("edit after checking out "+rev, data)
		if n < blocksOf(data)-2 || n == blocksOf(data) {
			t.Errorf("edit in place after checking out %s (fresh %v): %d of %d blocks reused", rev, fresh, n, blocksOf(data))
		}
		// A checkout that writes the file afresh records the quick table
		// of what it wrote: the next commit hashes only what changed.
		if chunks := len(old.Chunks); fresh && (c.known < chunks-3 || c.known == chunks) {
			t.Errorf("edit in place after a fresh checkout of %s: %d of %d chunks from the quick table", rev, c.known, chunks)
		}
		return data, n
	}

	// A checkout over the working file records the blocks of the version it
	// writes, so that an edit in place of that version is hashed once.
	v6, _ := checkoutEdit("HEAD~3", false, B/2)
	// That checkout copied runs of the working file, checked by the digest
	// only: its entry serves one commit, and the next hashes every block.
	v6[B/2+1] ^= 1
	if _, n = c.commit("second edit after checkout", v6); n != -1 {
		t.Errorf("second edit after a checkout that reused runs: %d blocks reused", n)
	}
	// So does a checkout that writes the file afresh (no working file).
	v7, _ := checkoutEdit("HEAD~5", true, 0)
	d = hashing.ID(blake3.Sum256(v7))

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
	if _, err := os.Stat(r.blocksPath(d)); err != nil {
		t.Errorf("gc removed the working file's entry: %v", err)
	}
}

// TestQuickTable checks which pieces a commit takes from the quick table:
// all of an unchanged file, all but the changed ones of a file edited in
// place, and those that moved in a file with bytes inserted (the table
// names bytes, not places). The IDs themselves are checked by commit,
// against the file hashed afresh.
func TestQuickTable(t *testing.T) {
	const B = hashing.BlockLen
	v1 := randomData(6*B+321, 11)
	r := testRepo(t, v1)
	c := newBlockCommits(t, r, "sub/x.bin")
	chunks := func() int {
		m, err := r.Manifest("", "sub/x.bin")
		if err != nil {
			t.Fatal(err)
		}
		return len(m.Chunks)
	}
	c.commit("touch", v1)
	if n := chunks(); c.known != n || n < 20 {
		t.Errorf("touched, same bytes: %d of %d chunks from the quick table", c.known, n)
	}

	v2 := bytes.Clone(v1)
	v2[2*B+77] ^= 1
	c.commit("one byte", v2)
	if n := chunks(); c.known < n-3 || c.known >= n {
		t.Errorf("one byte changed: %d of %d chunks from the quick table", c.known, n)
	}

	v3 := append(append(bytes.Clone(v2[:B/2]), randomData(1000, 12)...), v2[B/2:]...)
	c.commit("insert", v3)
	if n := chunks(); c.known < n-3 || c.reused > 1 {
		t.Errorf("1000 bytes inserted in block 0: %d of %d chunks from the quick table, %d blocks reused", c.known, n, c.reused)
	}

	// A damaged table is not used: the entry's checksum covers it.
	d := hashing.ID(blake3.Sum256(v3))
	raw, err := os.ReadFile(r.blocksPath(d))
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)-40] ^= 1 // in the last record's ID
	if err := os.WriteFile(r.blocksPath(d), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	c.commit("damaged table", v3)
	if c.known != -1 {
		t.Errorf("damaged table: %d chunks taken from it", c.known)
	}
}

// TestBlockCacheInlineBytes edits only a Parquet file's footer, which is
// inline bytes of its layout, not a chunk: the blocks it touches must be
// hashed again and the others reused.
func TestBlockCacheInlineBytes(t *testing.T) {
	t.Setenv("GIT_AUTHOR_NAME", "Test")
	t.Setenv("GIT_AUTHOR_EMAIL", "test@example.com")
	r, err := Init(t.TempDir(), "", Adapters{parquet.Adapter{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Track([]string{"*.parquet"}); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(r.Root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := pqgen.Write(&buf, pqgen.Config{Rows: 120000, RowGroups: 6, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	v1 := buf.Bytes()
	if blocksOf(v1) < 3 {
		t.Fatalf("test file of %d bytes: want 3 blocks or more", len(v1))
	}
	c := newBlockCommits(t, r, "sub/x.parquet")
	c.commit("v1", v1)
	m, err := r.Manifest("", "sub/x.parquet")
	if err != nil || m.Format != "parquet" {
		t.Fatalf("committed as %q (%v), want parquet: the footer must be inline bytes", m.Format, err)
	}
	// A digit after a decimal point in the footer's geo metadata: the
	// same length, still valid.
	v2 := bytes.Clone(v1)
	at := bytes.LastIndex(v2, []byte(`"bbox":[`))
	if at < 0 {
		t.Fatal("no bbox in the footer")
	}
	dot := at + bytes.IndexByte(v2[at:], '.')
	v2[dot+1] = '0' + (v2[dot+1]-'0'+1)%10
	if _, n := c.commit("footer edit", v2); n < blocksOf(v2)-2 || n == blocksOf(v2) {
		t.Errorf("footer edited: %d of %d blocks reused", n, blocksOf(v2))
	}
}
