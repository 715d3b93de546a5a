package chunkread

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
)

// memSource is a Source over a map, counting reads; every object is
// "remote" unless listed in local.
type memSource struct {
	objs      map[hashing.ID][]byte
	local     map[hashing.ID]bool
	file      []byte // what Assemble yields
	delay     time.Duration
	gets      atomic.Int64
	assembled atomic.Int64
}

func (s *memSource) Get(ctx context.Context, id hashing.ID) ([]byte, bool, error) {
	s.gets.Add(1)
	time.Sleep(s.delay)
	b, ok := s.objs[id]
	if !ok {
		return nil, true, errors.New("not found")
	}
	return b, !s.local[id], nil
}

func (s *memSource) Assemble(ctx context.Context, m *manifest.Manifest, fn func(io.ReaderAt) error) (Counts, error) {
	s.assembled.Add(1)
	return Counts{ChunksFetched: 2, BytesFetched: 9000}, fn(bytes.NewReader(s.file))
}

func randomBytes(n int, seed int64) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

// testFile builds a file of inline bytes, two chunks (one used twice) and
// a derived piece, and a Source holding its chunks and layout.
func testFile(t testing.TB) (*memSource, *manifest.Manifest) {
	t.Helper()
	a, b, d := randomBytes(4000, 1), randomBytes(5000, 2), randomBytes(300, 3)
	head, mid := randomBytes(100, 4), randomBytes(10, 5)
	src := &memSource{objs: map[hashing.ID][]byte{}, local: map[hashing.ID]bool{}}
	lay := &manifest.Layout{}
	var file []byte
	for _, p := range []struct {
		b      []byte
		chunk  bool
		derive string
	}{{head, false, ""}, {a, true, ""}, {mid, false, ""}, {b, true, ""}, {d, false, "index"}, {a, true, ""}} {
		pc := manifest.Piece{Len: int64(len(p.b)), Chunk: p.chunk, Derive: p.derive}
		switch {
		case p.chunk || p.derive != "":
			pc.ID = hashing.Sum(p.b)
			if p.chunk {
				src.objs[pc.ID] = p.b
			}
		default:
			pc.Inline = p.b
		}
		lay.Append(pc)
		file = append(file, p.b...)
	}
	enc := lay.Encode()
	m := &manifest.Manifest{Path: "f.bin", Size: int64(len(file)), Digest: hashing.Sum(file), Layout: hashing.Sum(enc), LayoutSize: int64(len(enc)),
		Chunks: []manifest.Chunk{{Key: "a", Size: 4000, ID: hashing.Sum(a)}, {Key: "b", Size: 5000, ID: hashing.Sum(b)}}}
	src.objs[m.Layout] = enc
	src.local[m.Layout] = true
	src.file = file
	return src, m
}

func TestReadAt(t *testing.T) {
	src, m := testFile(t)
	cr := New(src, 4500, 2) // holds one chunk: eviction happens
	f, err := cr.OpenFile(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(9))
	for range 200 {
		off := rng.Int63n(m.Size + 10)
		p := make([]byte, rng.Intn(3000)+1)
		n, err := f.ReadAt(p, off)
		wantN := max(0, min(int64(len(p)), m.Size-off))
		if int64(n) != wantN || (off+int64(len(p)) > m.Size) != (err == io.EOF) || err != nil && err != io.EOF {
			t.Fatalf("ReadAt(%d bytes at %d) = %d, %v; want %d", len(p), off, n, err, wantN)
		}
		if !bytes.Equal(p[:n], src.file[off:off+int64(n)]) {
			t.Fatalf("ReadAt(%d bytes at %d): wrong bytes", len(p), off)
		}
	}
	st := cr.Stats()
	if src.assembled.Load() != 1 || st.DerivedRebuilds != 1 {
		t.Errorf("derived piece rebuilt %d times (stats %d), want once", src.assembled.Load(), st.DerivedRebuilds)
	}
	if st.ChunksLocal != 1 || st.ChunksFetched < 3 || st.MemoryHits == 0 {
		t.Errorf("stats %+v: want the layout local, chunks fetched again after eviction, and memory hits", st)
	}
}

// Concurrent reads of one chunk share a single read of the Source.
func TestSharedFetch(t *testing.T) {
	src, m := testFile(t)
	src.delay = 20 * time.Millisecond
	f, err := New(src, 0, 8).OpenFile(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	before := src.gets.Load()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := f.ReadAt(make([]byte, 50), 200); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := src.gets.Load() - before; n != 1 {
		t.Errorf("8 concurrent reads of one chunk made %d Source reads, want 1", n)
	}
}

// A chunk whose length is not the layout's is an integrity error naming
// the file and the chunk's key; a layout length no layout has is refused
// before anything is read.
func TestIntegrity(t *testing.T) {
	src, m := testFile(t)
	id := m.Chunks[1].ID
	src.objs[id] = src.objs[id][:4999]
	f, err := New(src, 0, 0).OpenFile(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.ReadAt(make([]byte, 10), 4200)
	if !errors.Is(err, ErrIntegrity) || !strings.Contains(err.Error(), "f.bin: chunk b (") {
		t.Errorf("read of a short chunk: %v", err)
	}
	forged := *m
	forged.LayoutSize = 1
	gets := src.gets.Load()
	if _, err := New(src, 0, 0).OpenFile(context.Background(), &forged); !errors.Is(err, ErrIntegrity) || src.gets.Load() != gets {
		t.Errorf("layout length 1: %v, %d reads", err, src.gets.Load()-gets)
	}
}

// CountReads counts the reads made under its context only.
func TestCountReads(t *testing.T) {
	src, m := testFile(t)
	cr := New(src, 1, 0) // nothing kept in memory
	ctx1, counted1 := CountReads(context.Background())
	_, counted2 := CountReads(context.Background())
	f, err := cr.OpenFile(ctx1, m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadAtContext(ctx1, make([]byte, 100), 100); err != nil {
		t.Fatal(err)
	}
	if got := counted1(); got.ChunksLocal != 1 || got.ChunksFetched != 1 || got.BytesFetched != 4000 {
		t.Errorf("counted under ctx1: %+v", got)
	}
	if got := counted2(); got != (Stats{}) {
		t.Errorf("counted under ctx2, which read nothing: %+v", got)
	}
}

// A ReadSeeker reads the whole file through seeks and keeps the first
// error a read met.
func TestReadSeeker(t *testing.T) {
	src, m := testFile(t)
	ctx := context.Background()
	f, err := New(src, 0, 0).OpenFile(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	rs := f.NewReadSeeker(ctx, nil)
	if _, err := rs.Seek(-100, io.SeekEnd); err != nil {
		t.Fatal(err)
	}
	tail, err := io.ReadAll(rs)
	if err != nil || !bytes.Equal(tail, src.file[m.Size-100:]) || rs.Err() != nil {
		t.Errorf("tail: %d bytes, %v, %v", len(tail), err, rs.Err())
	}
	delete(src.objs, m.Chunks[0].ID)
	f, err = New(src, 0, 0).OpenFile(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	rs = f.NewReadSeeker(ctx, nil)
	if _, err := io.ReadAll(rs); err == nil || rs.Err() == nil {
		t.Errorf("read with a chunk missing: %v, Err %v", err, rs.Err())
	}
}

func TestByteLRU(t *testing.T) {
	c := newByteLRU(10)
	for i := range 5 {
		c.put(hashing.ID{byte(i)}, make([]byte, 4))
	}
	c.put(hashing.ID{9}, make([]byte, 11)) // over the bound: not kept
	if c.size > c.max || c.ll.Len() != 2 {
		t.Errorf("size %d of %d, %d items", c.size, c.max, c.ll.Len())
	}
	if _, ok := c.get(hashing.ID{4}); !ok {
		t.Error("most recent evicted")
	}
	if _, ok := c.get(hashing.ID{0}); ok {
		t.Error("oldest kept")
	}
}
