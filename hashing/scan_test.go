package hashing

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// cuts splits size bytes into pieces of random lengths up to maxLen, with
// some empty ones, as an adapter's layout does.
func cuts(rng *rand.Rand, size, maxLen int64) []Range {
	var out []Range
	for at := int64(0); at < size; {
		if rng.IntN(20) == 0 {
			out = append(out, Range{Off: at})
		}
		n := min(1+rng.Int64N(maxLen), size-at)
		out = append(out, Range{Off: at, Len: n})
		at += n
	}
	return append(out, Range{Off: size})
}

func randomBytes(rng *rand.Rand, n int64) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func setWindow(t *testing.T, w int64) {
	old := scanWindow
	scanWindow = w
	t.Cleanup(func() { scanWindow = old })
}

// scanAll runs Scan and checks what every scan must give: fn once per
// piece, with the piece's bytes and their ID.
func scanAll(t *testing.T, data []byte, pieces []Range, opt ScanOptions) (ID, []CV) {
	t.Helper()
	calls := make([]atomic.Int32, len(pieces))
	id, cvs, err := Scan(t.Context(), bytes.NewReader(data), int64(len(data)), pieces, opt, func(i int, id ID, b []byte) error {
		calls[i].Add(1)
		p := pieces[i]
		if want := data[p.Off : p.Off+p.Len]; !bytes.Equal(b, want) || id != ref(want) {
			return fmt.Errorf("piece %d (%d+%d): wrong bytes or ID", i, p.Off, p.Len)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range calls {
		if n := calls[i].Load(); n != 1 {
			t.Fatalf("piece %d: fn called %d times", i, n)
		}
	}
	return id, cvs
}

func TestScanMatches(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := []int64{0, 1, 5000, blockLen, blockLen + 1, 3*blockLen - 7, 4 * blockLen, 9*blockLen + 1234}
	for _, win := range []int64{blockLen, 2 * blockLen, 4 << 20} {
		setWindow(t, win)
		for _, size := range sizes {
			data := randomBytes(rng, size)
			// Tile-sized pieces, pieces that cross several windows, and
			// the whole file as one piece.
			for _, maxLen := range []int64{50 << 10, 3*blockLen + 17, max(size, 1)} {
				for _, workers := range []int{1, 2, 3} {
					pieces := cuts(rng, size, maxLen)
					id, cvs := scanAll(t, data, pieces, ScanOptions{Workers: workers})
					if want := ref(data); id != want {
						t.Fatalf("window %d size %d: digest %s, want %s", win, size, id.Short(), want.Short())
					}
					if size <= blockLen {
						if cvs != nil {
							t.Fatalf("size %d: %d CVs for one block", size, len(cvs))
						}
						continue
					}
					_, want, err := SumBlocks(t.Context(), bytes.NewReader(data), size, nil)
					if err != nil {
						t.Fatal(err)
					}
					if len(cvs) != len(want) {
						t.Fatalf("size %d: %d CVs, want %d", size, len(cvs), len(want))
					}
					for i := range cvs {
						if cvs[i] != want[i] {
							t.Fatalf("size %d: CV %d differs from SumBlocks'", size, i)
						}
					}
				}
			}
		}
	}
}

// Reused blocks are taken as given, never hashed, and asked for only once
// every piece over them is done.
func TestScanReuse(t *testing.T) {
	setWindow(t, 2*blockLen)
	rng := rand.New(rand.NewPCG(3, 4))
	size := int64(7*blockLen + 99)
	data := randomBytes(rng, size)
	pieces := cuts(rng, size, 3*blockLen)
	done := make([]atomic.Bool, len(pieces))
	asked := make([]atomic.Int32, blocksOf(size))
	fake := CV{1, 2, 3}
	var mu sync.Mutex
	var problems []string
	id, cvs, err := Scan(t.Context(), bytes.NewReader(data), size, pieces, ScanOptions{Workers: 2, Reuse: func(k int) (CV, bool) {
		asked[k].Add(1)
		start, end := int64(k)*blockLen, min(int64(k+1)*blockLen, size)
		for i, p := range pieces {
			if p.Len > 0 && p.Off < end && p.Off+p.Len > start && !done[i].Load() {
				mu.Lock()
				problems = append(problems, fmt.Sprintf("block %d asked before piece %d was done", k, i))
				mu.Unlock()
			}
		}
		return fake, k%2 == 1
	}}, func(i int, _ ID, _ []byte) error {
		done[i].Store(true)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) > 0 {
		t.Fatal(strings.Join(problems, "\n"))
	}
	_, want, err := SumBlocks(t.Context(), bytes.NewReader(data), size, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k := range want {
		if k%2 == 1 {
			want[k] = fake
		}
		if n := asked[k].Load(); n != 1 {
			t.Fatalf("block %d: Reuse asked %d times", k, n)
		}
		if cvs[k] != want[k] {
			t.Fatalf("block %d: CV not the reused one (or not the hashed one)", k)
		}
	}
	if root, _ := BlockRoot(want); id != root {
		t.Fatalf("digest %s, want the root of the reused CVs %s", id.Short(), root.Short())
	}
}

// shifting returns different bytes on every read: a file rewritten while
// it is read. Each byte is read once, so the digest is still that of the
// bytes the pieces saw.
type shifting struct {
	size  int64
	reads atomic.Int32
}

func (s *shifting) ReadAt(p []byte, off int64) (int, error) {
	n := s.reads.Add(1)
	for i := range p {
		p[i] = byte(int64(n)*7 + (off+int64(i))*13)
	}
	return len(p), nil
}

func TestScanReadsOnce(t *testing.T) {
	setWindow(t, blockLen)
	rng := rand.New(rand.NewPCG(5, 6))
	size := int64(6*blockLen + 5)
	pieces := cuts(rng, size, 2*blockLen+3)
	got := make([][]byte, len(pieces))
	r := &shifting{size: size}
	id, _, err := Scan(t.Context(), r, size, pieces, ScanOptions{Workers: 2}, func(i int, id ID, b []byte) error {
		got[i] = bytes.Clone(b)
		if id != ref(b) {
			return fmt.Errorf("piece %d: ID is not its bytes'", i)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := r.reads.Load(); n != int32(blocksOf(size)) {
		t.Fatalf("%d reads of %d windows", n, blocksOf(size))
	}
	if want := ref(bytes.Join(got, nil)); id != want {
		t.Fatalf("digest %s is not that of the pieces' bytes %s", id.Short(), want.Short())
	}
}

func TestScanErrors(t *testing.T) {
	setWindow(t, blockLen)
	size := int64(3*blockLen + 10)
	data := pattern(int(size))
	ok := []Range{{0, blockLen}, {blockLen, 2 * blockLen}, {3 * blockLen, 10}}
	bad := map[string][]Range{
		"gap":     {{0, 10}, {11, size - 11}},
		"overlap": {{0, 10}, {9, size - 9}},
		"short":   {{0, size - 1}},
		"long":    {{0, size + 1}},
		"huge":    {{0, MaxRange + 1}},
		"late":    {{1, size - 1}},
	}
	nop := func(int, ID, []byte) error { return nil }
	for name, pieces := range bad {
		if _, _, err := Scan(t.Context(), bytes.NewReader(data), size, pieces, ScanOptions{}, nop); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// A read error names the bytes; fn's error comes back as it was.
	failing := &readerAt{data: data, failAt: 2 * blockLen, err: errors.New("disk on fire")}
	if _, _, err := Scan(t.Context(), failing, size, ok, ScanOptions{Workers: 2}, nop); err == nil || !strings.Contains(err.Error(), "read bytes") {
		t.Errorf("read error: %v", err)
	}
	boom := errors.New("boom")
	if _, _, err := Scan(t.Context(), bytes.NewReader(data), size, ok, ScanOptions{Workers: 2}, func(i int, _ ID, _ []byte) error {
		if i == 1 {
			return boom
		}
		return nil
	}); !errors.Is(err, boom) {
		t.Errorf("fn error: %v", err)
	}
	if _, _, err := Scan(t.Context(), io.NewSectionReader(bytes.NewReader(data), 0, size-1), size, ok, ScanOptions{}, nop); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("file shorter than its size: %v", err)
	}
}

// Window buffers are given back as their pieces and blocks finish: memory
// does not grow with the file.
func TestScanBounded(t *testing.T) {
	setWindow(t, blockLen)
	rng := rand.New(rand.NewPCG(7, 8))
	size := int64(64 * blockLen)
	data := make([]byte, size)
	for _, maxLen := range []int64{40 << 10, 3 * blockLen} {
		s := newScan(bytes.NewReader(data), size, cuts(rng, size, maxLen), ScanOptions{Workers: 2}, func(int, ID, []byte) error { return nil })
		if _, _, err := s.run(t.Context()); err != nil {
			t.Fatal(err)
		}
		// Two workers, each holding the windows of one piece (up to four
		// for a 3 MiB piece) and waiting on at most one more.
		if p := s.peak.Load(); p > 10 {
			t.Errorf("pieces up to %d bytes: %d windows held at once", maxLen, p)
		}
		if l := s.live.Load(); l != 0 {
			t.Errorf("%d windows never given back", l)
		}
	}
}

// BenchmarkScan is a commit's hashing of a COG: 40 KiB tiles and the
// digest, from one read.
func BenchmarkScan(b *testing.B) {
	f, size := benchFile(b)
	rs := benchRanges(size, 40<<10)
	b.SetBytes(size)
	for b.Loop() {
		if _, _, err := Scan(b.Context(), f, size, rs, ScanOptions{}, func(int, ID, []byte) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTwoPasses is what Scan replaces: the tiles with HashRanges,
// then the digest with SumBlocks (the file read twice).
func BenchmarkTwoPasses(b *testing.B) {
	f, size := benchFile(b)
	rs := benchRanges(size, 40<<10)
	b.SetBytes(size)
	for b.Loop() {
		if err := HashRanges(b.Context(), f, rs, Options{}, func(int, ID, []byte) error { return nil }); err != nil {
			b.Fatal(err)
		}
		if _, _, err := SumBlocks(b.Context(), f, size, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// Quick sees every non-empty piece with the QuickSum of its bytes, and a
// piece whose ID it gives is not hashed: fn gets that ID, and the blocks
// are still hashed from the bytes.
func TestScanQuick(t *testing.T) {
	setWindow(t, 2*blockLen)
	rng := rand.New(rand.NewPCG(5, 6))
	size := int64(5*blockLen + 1234)
	data := randomBytes(rng, size)
	pieces := cuts(rng, size, blockLen/3)
	const seed = 0x5eed
	given := func(i int) ID { return ID{byte(i), byte(i >> 8), 0xee} } // no piece hashes to it
	var mu sync.Mutex
	var problems []string
	asked := make([]atomic.Int32, len(pieces))
	id, cvs, err := Scan(t.Context(), bytes.NewReader(data), size, pieces, ScanOptions{Workers: 2, QuickSeed: seed, Quick: func(i int, q Quick) (ID, bool) {
		asked[i].Add(1)
		p := pieces[i]
		if want := QuickSum(seed, data[p.Off:p.Off+p.Len]); q != want {
			mu.Lock()
			problems = append(problems, fmt.Sprintf("piece %d: Quick %x, want %x", i, q, want))
			mu.Unlock()
		}
		return given(i), i%3 == 0
	}}, func(i int, id ID, b []byte) error {
		p := pieces[i]
		want := ref(data[p.Off : p.Off+p.Len])
		if p.Len > 0 && i%3 == 0 {
			want = given(i)
		}
		if id != want || !bytes.Equal(b, data[p.Off:p.Off+p.Len]) {
			return fmt.Errorf("piece %d (%d+%d): wrong bytes or ID", i, p.Off, p.Len)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) > 0 {
		t.Fatal(strings.Join(problems, "\n"))
	}
	for i, p := range pieces {
		if n, want := asked[i].Load(), min(p.Len, 1); int64(n) != want {
			t.Fatalf("piece %d of %d bytes: Quick asked %d times", i, p.Len, n)
		}
	}
	wantID, wantCVs, err := SumBlocks(t.Context(), bytes.NewReader(data), size, nil)
	if err != nil {
		t.Fatal(err)
	}
	if id != wantID || len(cvs) != len(wantCVs) {
		t.Fatalf("digest %s, want %s", id.Short(), wantID.Short())
	}
	if QuickSum(seed, data[:100]) == QuickSum(seed+1, data[:100]) || QuickSum(seed, data[:100]) == QuickSum(seed, data[1:101]) {
		t.Fatal("QuickSum ignores its seed or its bytes")
	}
}

// BenchmarkScanQuick is the scan of a commit after an edit of a few tiles
// in place: each block's CV comes from the block cache but one in a
// hundred, and each tile's ID from the quick table (quick) but one in a
// hundred, or from BLAKE3 (blake3).
func BenchmarkScanQuick(b *testing.B) {
	f, size := benchFile(b)
	rs := benchRanges(size, 40<<10)
	reuse := func(k int) (CV, bool) { return CV{}, k%100 != 0 }
	for _, c := range []struct {
		name  string
		quick func(int, Quick) (ID, bool)
	}{
		{"blake3", nil},
		{"quick", func(i int, _ Quick) (ID, bool) { return ID{1}, i%100 != 0 }},
	} {
		b.Run(c.name, func(b *testing.B) {
			opt := ScanOptions{Reuse: reuse, QuickSeed: 1, Quick: c.quick}
			b.SetBytes(size)
			for b.Loop() {
				if _, _, err := Scan(b.Context(), f, size, rs, opt, func(int, ID, []byte) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
