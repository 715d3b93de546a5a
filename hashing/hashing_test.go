package hashing

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/zeebo/blake3"
)

func TestParseIDRoundTrip(t *testing.T) {
	id := Sum([]byte("chunkvc"))
	for _, s := range []string{id.String(), id.Tagged()} {
		got, err := ParseID(s)
		if err != nil || got != id {
			t.Fatalf("ParseID(%q) = %v, %v; want %v", s, got, err, id)
		}
	}
	var every ID // every byte value once, so every hex digit pair is decoded
	for i := 0; i < 256; i += len(every) {
		for j := range every {
			every[j] = byte(i + j)
		}
		if got, err := ParseID(every.String()); err != nil || got != every {
			t.Fatalf("ParseID(%q) = %v, %v", every.String(), got, err)
		}
	}
	bad := []string{"", "abc", id.String()[:63] + "g", "ABCDEF" + id.String()[6:], "sha256:" + id.String(),
		id.String()[:10] + "/" + id.String()[11:], id.String()[:20] + ":" + id.String()[21:]}
	for _, s := range bad {
		if _, err := ParseID(s); !errors.Is(err, ErrBadID) {
			t.Errorf("ParseID(%q) err = %v, want ErrBadID", s, err)
		}
	}
	// Every byte value, at the first and the last digit of either half.
	for c := 0; c < 256; c++ {
		valid := '0' <= c && c <= '9' || 'a' <= c && c <= 'f'
		for _, at := range []int{0, 1, 62, 63} {
			b := []byte(id.String())
			b[at] = byte(c)
			_, err := ParseID(string(b))
			if valid != (err == nil) {
				t.Fatalf("ParseID with byte %#x at %d: err = %v", c, at, err)
			}
		}
	}
}

func TestSumMatchesReference(t *testing.T) {
	// Official BLAKE3 test vector for the empty input.
	const empty = "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
	if got := Sum(nil).String(); got != empty {
		t.Fatalf("Sum(nil) = %s, want %s", got, empty)
	}
	d := New()
	d.Write([]byte("ab"))
	d.Write([]byte("c"))
	if d.ID() != Sum([]byte("abc")) {
		t.Fatal("streaming digest differs from one-shot Sum")
	}
}

func TestHashRangesMatchesSerial(t *testing.T) {
	data := make([]byte, 3<<20+17)
	rand.New(rand.NewSource(7)).Read(data)
	var ranges []Range
	for off := int64(0); off < int64(len(data)); {
		n := int64(1 + rand.Intn(200000))
		if off+n > int64(len(data)) {
			n = int64(len(data)) - off
		}
		ranges = append(ranges, Range{off, n})
		off += n
	}
	ranges = append(ranges, Range{0, 0}, Range{5, 10})
	for _, workers := range []int{1, 2, 7} {
		got := make([]ID, len(ranges))
		var mu sync.Mutex
		err := HashRanges(context.Background(), bytes.NewReader(data), ranges, Options{Workers: workers}, func(i int, id ID, b []byte) error {
			if int64(len(b)) != ranges[i].Len {
				t.Errorf("range %d: got %d bytes", i, len(b))
			}
			mu.Lock()
			got[i] = id
			mu.Unlock()
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for i, rg := range ranges {
			if want := ref(data[rg.Off : rg.Off+rg.Len]); got[i] != want {
				t.Fatalf("workers=%d range %d: id mismatch", workers, i)
			}
		}
	}
}

func TestHashRangesErrors(t *testing.T) {
	data := make([]byte, 100)
	r := bytes.NewReader(data)
	if err := HashRanges(context.Background(), r, []Range{{90, 20}}, Options{}, func(int, ID, []byte) error { return nil }); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("range past EOF: err = %v, want ErrUnexpectedEOF", err)
	}
	if err := HashRanges(context.Background(), r, []Range{{0, MaxRange + 1}}, Options{}, func(int, ID, []byte) error { return nil }); err == nil {
		t.Fatal("oversized range accepted")
	}
	boom := errors.New("boom")
	ranges := make([]Range, 1000)
	for i := range ranges {
		ranges[i] = Range{int64(i % 100), 1}
	}
	if err := HashRanges(context.Background(), r, ranges, Options{Workers: 3}, func(i int, _ ID, _ []byte) error {
		if i == 10 {
			return boom
		}
		return nil
	}); !errors.Is(err, boom) {
		t.Fatalf("callback error not returned: %v", err)
	}
}

func TestSumReaderAt(t *testing.T) {
	data := make([]byte, 2<<20+3)
	rand.New(rand.NewSource(1)).Read(data)
	got, err := SumReaderAt(context.Background(), bytes.NewReader(data), int64(len(data)))
	if err != nil || got != Sum(data) {
		t.Fatalf("SumReaderAt = %v, %v", got, err)
	}
}

func TestSumReaderAtSizes(t *testing.T) {
	data := make([]byte, 9<<20)
	rand.New(rand.NewSource(8)).Read(data)
	var sizes []int
	for _, k := range []int{0, 1, 2, 3, 4, 8} {
		for _, d := range []int{-1023, -1024, -1, 0, 1, 1023, 1024, 1025, bufLen + 1} {
			if n := k*blockLen + d; n >= 0 {
				sizes = append(sizes, n)
			}
		}
	}
	sizes = append(sizes, 7<<20+12345, len(data))
	for _, workers := range []int{1, 2, 3, 7, 16} {
		for _, n := range sizes {
			got, _, err := sumReaderAt(t.Context(), bytes.NewReader(data), int64(n), workers, nil, false)
			if want := ref(data[:n]); err != nil || got != want {
				t.Fatalf("workers=%d size=%d: SumReaderAt = %s, %v; want %s", workers, n, got.Short(), err, want.Short())
			}
		}
	}
}

func TestSumReaderAtGOMAXPROCS(t *testing.T) {
	data := make([]byte, 5<<20+777)
	rand.New(rand.NewSource(9)).Read(data)
	want := ref(data)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2, 4, 9} {
		runtime.GOMAXPROCS(procs)
		got, err := SumReaderAt(t.Context(), bytes.NewReader(data), int64(len(data)))
		if err != nil || got != want {
			t.Fatalf("GOMAXPROCS=%d: SumReaderAt = %s, %v; want %s", procs, got.Short(), err, want.Short())
		}
	}
}

func TestSumReaderAtLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("hashes 230 MiB")
	}
	data := make([]byte, 129<<20+1)
	rand.New(rand.NewSource(10)).Read(data)
	for _, n := range []int{100<<20 + 12345, len(data)} {
		got, err := SumReaderAt(t.Context(), bytes.NewReader(data[:n]), int64(n))
		if want := ref(data[:n]); err != nil || got != want {
			t.Fatalf("size %d: SumReaderAt = %s, %v; want %s", n, got.Short(), err, want.Short())
		}
	}
}

func TestSumReaderAtFile(t *testing.T) {
	data := make([]byte, 6<<20+4321)
	rand.New(rand.NewSource(13)).Read(data)
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, workers := range []int{1, 2, 3} {
		for _, n := range []int{0, 100, blockLen, blockLen + 1, 3*blockLen - 5, 4 * blockLen, len(data)} {
			got, _, err := sumReaderAt(t.Context(), f, int64(n), workers, nil, false)
			if want := ref(data[:n]); err != nil || got != want {
				t.Fatalf("workers=%d size=%d: SumReaderAt = %s, %v; want %s", workers, n, got.Short(), err, want.Short())
			}
		}
	}

	// A file that shrank below size: the mapped pages past its end fault,
	// and the blocks are read instead, which reports the short file.
	if err := os.Truncate(p, 3<<20+blockLen/2); err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{1, 2} {
		_, _, err := sumReaderAt(t.Context(), f, int64(len(data)), workers, nil, false)
		if !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), "read bytes 3145728..4194304") && !strings.Contains(err.Error(), "read bytes 4194304..5242880") {
			t.Errorf("workers=%d: shrunk file: err = %v, want ErrUnexpectedEOF reading block 3 or 4", workers, err)
		}
	}
}

// readerAt is an io.ReaderAt over data that counts concurrent reads, and can
// fail or call hook at a given offset.
type readerAt struct {
	data     []byte
	failAt   int64
	err      error
	hook     func()
	mu       sync.Mutex
	inFlight int
	peak     int
}

func (r *readerAt) ReadAt(p []byte, off int64) (int, error) {
	r.mu.Lock()
	r.inFlight++
	r.peak = max(r.peak, r.inFlight)
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.inFlight--
		r.mu.Unlock()
	}()
	if r.err != nil && off == r.failAt {
		if r.hook != nil {
			r.hook()
		}
		return 0, r.err
	}
	return bytes.NewReader(r.data).ReadAt(p, off)
}

func TestSumReaderAtErrors(t *testing.T) {
	data := make([]byte, 6<<20)
	for _, workers := range []int{1, 3} {
		// A file shorter than size.
		_, _, err := sumReaderAt(t.Context(), bytes.NewReader(data), int64(len(data))+5, workers, nil, false)
		if !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), "read bytes 6291456..6291461") {
			t.Errorf("workers=%d: short file: err = %v, want ErrUnexpectedEOF with the range", workers, err)
		}

		// A read error is wrapped with its range.
		boom := errors.New("boom")
		r := &readerAt{data: data, failAt: 2 << 20, err: boom}
		_, _, err = sumReaderAt(t.Context(), r, int64(len(data)), workers, nil, false)
		if !errors.Is(err, boom) || !strings.Contains(err.Error(), "read bytes 2097152..3145728") {
			t.Errorf("workers=%d: read error: err = %v", workers, err)
		}

		// Cancelling stops the work with ctx.Err().
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, _, err := sumReaderAt(ctx, bytes.NewReader(data), int64(len(data)), workers, nil, false); !errors.Is(err, context.Canceled) {
			t.Errorf("workers=%d: cancelled before: err = %v", workers, err)
		}
		ctx, cancel = context.WithCancel(t.Context())
		r = &readerAt{data: data, failAt: 3 << 20, err: context.Canceled, hook: cancel}
		if _, _, err := sumReaderAt(ctx, r, int64(len(data)), workers, nil, false); !errors.Is(err, context.Canceled) {
			t.Errorf("workers=%d: cancelled during: err = %v", workers, err)
		}
		cancel()
	}
}

func TestSumReaderAtBounded(t *testing.T) {
	data := make([]byte, 40<<20)
	rand.New(rand.NewSource(11)).Read(data)
	for _, workers := range []int{2, 5} {
		r := &readerAt{data: data}
		got, _, err := sumReaderAt(t.Context(), r, int64(len(data)), workers, nil, false)
		if err != nil || got != ref(data) {
			t.Fatalf("workers=%d: %s, %v", workers, got.Short(), err)
		}
		if r.peak > workers {
			t.Errorf("workers=%d: %d reads in flight", workers, r.peak)
		}
	}
}

var bench struct {
	once sync.Once
	dir  string // temporary, removed by TestMain
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bench.dir != "" {
		os.RemoveAll(bench.dir)
	}
	os.Exit(code)
}

// benchFile returns a file of 256 MiB of random bytes, written once per test
// binary; CHUNKVC_BENCH_FILE names an existing file to use instead (make
// bench passes the same file to b3sum so the two are measured on identical
// bytes in one run).
func benchFile(b *testing.B) (*os.File, int64) {
	b.Helper()
	bench.once.Do(func() {
		if bench.path = os.Getenv("CHUNKVC_BENCH_FILE"); bench.path != "" {
			return
		}
		if bench.dir, bench.err = os.MkdirTemp("", "chunkvc-hashing-bench"); bench.err != nil {
			return
		}
		bench.path = filepath.Join(bench.dir, "bench.bin")
		data := make([]byte, 256<<20)
		rand.New(rand.NewSource(1)).Read(data)
		bench.err = os.WriteFile(bench.path, data, 0o644)
	})
	if bench.err != nil {
		b.Fatal(bench.err)
	}
	f, err := os.Open(bench.path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	st, err := f.Stat()
	if err != nil {
		b.Fatal(err)
	}
	return f, st.Size()
}

func benchRanges(size, chunk int64) []Range {
	var rs []Range
	for off := int64(0); off < size; off += chunk {
		n := min(chunk, size-off)
		rs = append(rs, Range{off, n})
	}
	return rs
}

// BenchmarkHashRanges hashes a file in 1 MiB ranges on GOMAXPROCS workers.
func BenchmarkHashRanges(b *testing.B) {
	f, size := benchFile(b)
	rs := benchRanges(size, 1<<20)
	b.SetBytes(size)
	for b.Loop() {
		if err := HashRanges(context.Background(), f, rs, Options{}, func(int, ID, []byte) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHashRangesSerial is the single-threaded baseline for HashRanges.
func BenchmarkHashRangesSerial(b *testing.B) {
	f, size := benchFile(b)
	rs := benchRanges(size, 1<<20)
	b.SetBytes(size)
	for b.Loop() {
		if err := HashRanges(context.Background(), f, rs, Options{Workers: 1}, func(int, ID, []byte) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSumReaderAt is the whole-file digest pass.
func BenchmarkSumReaderAt(b *testing.B) {
	f, size := benchFile(b)
	b.SetBytes(size)
	for b.Loop() {
		if _, err := SumReaderAt(context.Background(), f, size); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWithoutMmap is SumReaderAt on a reader that is not an *os.File,
// so it copies every block with ReadAt.
func BenchmarkWithoutMmap(b *testing.B) {
	f, size := benchFile(b)
	r := struct{ io.ReaderAt }{f}
	b.SetBytes(size)
	for b.Loop() {
		if _, err := SumReaderAt(context.Background(), r, size); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkZeebo measures what HashRanges and SumReaderAt did before the
// guts tree code: zeebo/blake3 per range, and a serial streaming digest of
// the whole file. (Its name keeps it out of make bench's
// 'HashRanges|SumReaderAt'.)
func BenchmarkZeebo(b *testing.B) {
	b.Run("HashRanges", func(b *testing.B) {
		f, size := benchFile(b)
		rs := benchRanges(size, 1<<20)
		b.SetBytes(size)
		for b.Loop() {
			if err := hashRanges(context.Background(), f, rs, Options{}, ref, func(int, ID, []byte) error { return nil }); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("SumReaderAt", func(b *testing.B) {
		f, size := benchFile(b)
		b.SetBytes(size)
		buf := make([]byte, 1<<20)
		for b.Loop() {
			d := blake3.New()
			for off := int64(0); off < size; off += int64(len(buf)) {
				n := min(int64(len(buf)), size-off)
				if err := readFull(f, buf[:n], off); err != nil {
					b.Fatal(err)
				}
				d.Write(buf[:n])
			}
			d.Sum(nil)
		}
	})
}

// TestHashRangesStops: a cancelled context or an error from fn stops the
// workers before their next range, and is what HashRanges returns.
func TestHashRangesStops(t *testing.T) {
	data := pattern(1 << 20)
	var ranges []Range
	for off := int64(0); off < int64(len(data)); off += 1000 {
		ranges = append(ranges, Range{Off: off, Len: min(1000, int64(len(data))-off)})
	}
	for _, workers := range []int{1, 2, 4} {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		calls := 0
		err := HashRanges(ctx, bytes.NewReader(data), ranges, Options{Workers: workers}, func(int, ID, []byte) error { calls++; return nil })
		if !errors.Is(err, context.Canceled) || calls != 0 {
			t.Errorf("workers=%d, cancelled before: err %v, %d calls", workers, err, calls)
		}

		// After cancel returns, each worker may still deliver the range
		// it had started, and no more.
		ctx, cancel = context.WithCancel(t.Context())
		var n, late atomic.Int64
		var cancelled atomic.Bool
		err = HashRanges(ctx, bytes.NewReader(data), ranges, Options{Workers: workers}, func(int, ID, []byte) error {
			if cancelled.Load() {
				late.Add(1)
			}
			if n.Add(1) == 10 {
				cancel()
				cancelled.Store(true)
			}
			return nil
		})
		cancel()
		if !errors.Is(err, context.Canceled) || late.Load() > int64(workers) {
			t.Errorf("workers=%d, cancelled during: err %v, %d calls after cancel", workers, err, late.Load())
		}

		boom := errors.New("boom")
		n.Store(0)
		err = HashRanges(t.Context(), bytes.NewReader(data), ranges, Options{Workers: workers}, func(i int, id ID, b []byte) error {
			if id != ref(b) {
				t.Errorf("range %d: wrong ID", i)
			}
			if n.Add(1) == 5 {
				return boom
			}
			return nil
		})
		if !errors.Is(err, boom) || n.Load() == int64(len(ranges)) {
			t.Errorf("workers=%d, fn failed: err %v after %d of %d calls", workers, err, n.Load(), len(ranges))
		}
	}
}
