package repo

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store/local"
)

// testRepo commits data as sub/x.bin (generic chunks) on main and
// returns the repository.
func testRepo(t *testing.T, data []byte) *Repo {
	t.Helper()
	t.Setenv("GIT_AUTHOR_NAME", "Test")
	t.Setenv("GIT_AUTHOR_EMAIL", "test@example.com")
	dir := t.TempDir()
	r, err := Init(dir, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Track([]string{"*.bin"}); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "x.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit(context.Background(), CommitOptions{Message: "v1"}); err != nil {
		t.Fatal(err)
	}
	return r
}

func randomData(n int, seed int64) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

func TestFileReaderRandomAccess(t *testing.T) {
	data := randomData(1<<20+12345, 1)
	r := testRepo(t, data)
	m, err := r.Manifest("", "sub/x.bin")
	if err != nil {
		t.Fatal(err)
	}
	cr := r.NewChunkReader(256<<10, 4) // smaller than the file: eviction happens
	f, err := cr.OpenFile(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(2))
	for i := 0; i < 300; i++ {
		off := rng.Int63n(int64(len(data)) + 10)
		n := rng.Intn(200000)
		buf := make([]byte, n)
		got, err := f.ReadAt(buf, off)
		want := 0
		if off < int64(len(data)) {
			want = copy(make([]byte, n), data[off:])
		}
		if got != want || !bytes.Equal(buf[:got], data[min(off, int64(len(data))):min(off, int64(len(data)))+int64(got)]) {
			t.Fatalf("ReadAt(%d, %d) = %d bytes, want %d (or bytes differ)", n, off, got, want)
		}
		if (off+int64(n) > int64(len(data))) != (err == io.EOF) {
			t.Fatalf("ReadAt(%d, %d): err %v", n, off, err)
		}
	}
	if st := cr.Stats(); st.MemoryHits == 0 || st.ChunksLocal+st.ChunksFetched == 0 {
		t.Fatalf("stats %+v", st)
	}
	// io.SectionReader over the ReaderAt reads the whole file.
	all, err := io.ReadAll(io.NewSectionReader(f, 0, f.Size()))
	if err != nil || !bytes.Equal(all, data) {
		t.Fatalf("full read: %v", err)
	}
}

// corruptChunk flips a bit of chunk id where the embedded store keeps it.
func corruptChunk(t *testing.T, r *Repo, id hashing.ID) {
	t.Helper()
	loc, err := r.read.Local.(*local.Store).Locate(id)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(loc.Path, 0o644)
	b, err := os.ReadFile(loc.Path)
	if err != nil {
		t.Fatal(err)
	}
	b[loc.Off] ^= 1
	if err := os.WriteFile(loc.Path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFileReaderCorruptChunk(t *testing.T) {
	data := randomData(300000, 3)
	r := testRepo(t, data)
	m, _ := r.Manifest("", "sub/x.bin")
	corruptChunk(t, r, m.Chunks[len(m.Chunks)/2].ID)
	f, err := r.NewChunkReader(0, 0).OpenFile(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(io.NewSectionReader(f, 0, f.Size())); err == nil {
		t.Fatal("corrupt chunk served")
	}
}

// A ReadSeeker keeps the first error a read met, for a server that sent
// its headers before: nil after a clean read to the end.
func TestReadSeekerErr(t *testing.T) {
	data := randomData(300000, 3)
	r := testRepo(t, data)
	m, err := r.Manifest("", "sub/x.bin")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	f, err := r.NewChunkReader(0, 0).OpenFile(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	rs := f.NewReadSeeker(ctx, nil)
	if got, err := io.ReadAll(rs); err != nil || !bytes.Equal(got, data) || rs.Err() != nil {
		t.Fatalf("clean read: %d bytes, %v, Err %v", len(got), err, rs.Err())
	}
	corruptChunk(t, r, m.Chunks[len(m.Chunks)/2].ID)
	f, err = r.NewChunkReader(0, 0).OpenFile(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	rs = f.NewReadSeeker(ctx, nil)
	_, err = io.ReadAll(rs)
	if err == nil || rs.Err() == nil || rs.Err().Error() != err.Error() {
		t.Fatalf("read of a corrupt chunk: %v, Err %v; want the same error", err, rs.Err())
	}
}

// CountReads counts the chunk reads made under its context only, apart
// from the reader's own lifetime stats.
func TestCountReads(t *testing.T) {
	data := randomData(1<<20+777, 9)
	r := testRepo(t, data)
	m, err := r.Manifest("", "sub/x.bin")
	if err != nil {
		t.Fatal(err)
	}
	cr := r.NewChunkReader(0, 0)
	f, err := cr.OpenFile(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	var chunks, bytes int64
	seen := map[hashing.ID]bool{}
	for _, c := range m.Chunks {
		if !seen[c.ID] {
			seen[c.ID] = true
			chunks++
			bytes += c.Size
		}
	}
	ctx1, counted1 := CountReads(context.Background())
	ctx2, counted2 := CountReads(context.Background())
	buf := make([]byte, len(data))
	if _, err := f.ReadAtContext(ctx1, buf, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadAtContext(ctx2, buf, 0); err != nil { // from memory
		t.Fatal(err)
	}
	// The embedded store is the configured one here: its chunks count as
	// fetched (the remote branch of the read path).
	if got := counted1(); got.ChunksFetched+got.ChunksLocal != chunks || got.BytesFetched+got.BytesLocal != bytes {
		t.Errorf("first read counted %+v; want its %d chunks, %d bytes", got, chunks, bytes)
	}
	if got := counted2(); got != (ReadStats{}) {
		t.Errorf("second read, from memory, counted %+v; want nothing", got)
	}
	if all := cr.Stats(); all.ChunksFetched+all.ChunksLocal != chunks+1 || all.MemoryHits < chunks { // +1: the layout
		t.Errorf("reader stats %+v; want %d chunks read and as many memory hits", all, chunks+1)
	}
}

// A manifest that misstates its layout blob's length is not served: the
// FileReader (serve's) refuses it as an integrity error naming the file,
// without allocating for an absurd claim.
func TestFileReaderLayoutLength(t *testing.T) {
	r := testRepo(t, randomData(300000, 5))
	m, err := r.Manifest("", "sub/x.bin")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int64{1 << 62, 0, 999, m.LayoutSize + 1} {
		forged := *m
		forged.LayoutSize = n
		_, err := r.NewChunkReader(0, 0).OpenFile(context.Background(), &forged)
		if !errors.Is(err, ErrIntegrity) || !strings.Contains(err.Error(), "sub/x.bin") {
			t.Errorf("layout length %d: OpenFile: %v; want an integrity error naming sub/x.bin", n, err)
		}
	}
	if _, err := r.NewChunkReader(0, 0).OpenFile(context.Background(), m); err != nil {
		t.Fatal(err)
	}
}
