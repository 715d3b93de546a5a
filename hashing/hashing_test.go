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
	"sync"
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
	bad := []string{"", "abc", id.String()[:63] + "g", "ABCDEF" + id.String()[6:], "sha256:" + id.String()}
	for _, s := range bad {
		if _, err := ParseID(s); !errors.Is(err, ErrBadID) {
			t.Errorf("ParseID(%q) err = %v, want ErrBadID", s, err)
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
			if want := ID(blake3.Sum256(data[rg.Off : rg.Off+rg.Len])); got[i] != want {
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

// benchFile returns a file of benchSize random bytes; CHUNKVC_BENCH_FILE
// names an existing file to use instead (make bench passes the same file to
// b3sum so the two are measured on identical bytes in one run).
func benchFile(b *testing.B) (*os.File, int64) {
	b.Helper()
	p := os.Getenv("CHUNKVC_BENCH_FILE")
	if p == "" {
		p = filepath.Join(b.TempDir(), "bench.bin")
		data := make([]byte, 256<<20)
		rand.New(rand.NewSource(1)).Read(data)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	f, err := os.Open(p)
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
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
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
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := HashRanges(context.Background(), f, rs, Options{Workers: 1}, func(int, ID, []byte) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSumReaderAt is the whole-file digest pass.
func BenchmarkSumReaderAt(b *testing.B) {
	f, size := benchFile(b)
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := SumReaderAt(context.Background(), f, size); err != nil {
			b.Fatal(err)
		}
	}
	_ = runtime.GOMAXPROCS(0)
}
