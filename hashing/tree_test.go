package hashing

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"

	"github.com/zeebo/blake3"
)

// ref is the reference implementation the guts tree code is checked against.
func ref(b []byte) ID { return ID(blake3.Sum256(b)) }

// pattern returns the input of the official BLAKE3 test vectors: byte i is
// i % 251.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i % 251)
	}
	return b
}

// checkSum compares Sum and Digest (one Write, and 1000-byte Writes) on b
// with the reference.
func checkSum(t testing.TB, b []byte) {
	t.Helper()
	want := ref(b)
	if got := Sum(b); got != want {
		t.Fatalf("Sum of %d bytes = %s, want %s", len(b), got.Short(), want.Short())
	}
	d := New()
	d.Write(b)
	if got := d.ID(); got != want {
		t.Fatalf("Digest of %d bytes in one Write = %s, want %s", len(b), got.Short(), want.Short())
	}
	d.Reset()
	for p := b; len(p) > 0; p = p[min(len(p), 1000):] {
		d.Write(p[:min(len(p), 1000)])
	}
	if got := d.ID(); got != want {
		t.Fatalf("Digest of %d bytes in 1000-byte Writes = %s, want %s", len(b), got.Short(), want.Short())
	}
}

func TestSumVectors(t *testing.T) {
	// Official BLAKE3 test vectors (first 32 bytes of "hash"), then a few
	// longer inputs hashed by b3sum 1.2.0; all inputs are pattern(n).
	vectors := []struct {
		n    int
		want string
	}{
		{0, "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"},
		{1, "2d3adedff11b61f14c886e35afa036736dcd87a74d27b5c1510225d0f592e213"},
		{1023, "10108970eeda3eb932baac1428c7a2163b0e924c9a9e25b35bba72b28f70bd11"},
		{1024, "42214739f095a406f3fc83deb889744ac00df831c10daa55189b5d121c855af7"},
		{1025, "d00278ae47eb27b34faecf67b4fe263f82d5412916c1ffd97c8cb7fb814b8444"},
		{2049, "5f4d72f40d7a5f82b15ca2b2e44b1de3c2ef86c426c95c1af0b6879522563030"},
		{8192, "aae792484c8efe4f19e2ca7d371d8c467ffb10748d8a5a1ae579948f718a2a63"},
		{8193, "bab6c09cb8ce8cf459261398d2e7aef35700bf488116ceb94a36d0f5f1b7bc3b"},
		{16384, "f875d6646de28985646f34ee13be9a576fd515f76b5b0a26bb324735041ddde4"},
		{31744, "62b6960e1a44bcc1eb1a611a8d6235b6b4b78f32e7abc4fb4c6cdcce94895c47"},
		{100000, "d93c23eedaf165a7e0be908ba86f1a7a520d568d2d13cde787c8580c5c72cc54"},
		{16385, "1dabe216be2578830263b049de1639f39f05a4da616b9b78c7a5e4e41662fd1f"},
		{32769, "da589428d9b32c97658a04a21c0c8a38aad2ac402120819d956fd6d62bbfa36e"},
		{40960, "151eecbc59b2f1d4f5f858f8b6c23e828c60a677cb7532661324cb26efa31e03"},
		{1<<20 + 1025, "860f19b5fefff01454de342be87a20059449529116a20fb22a21da665aafa071"},
		{3<<20 + 1, "fd984eaa20053d346cc7c79a175338f91556e68b871d877b23568a4587d9875b"},
	}
	for _, v := range vectors {
		b := pattern(v.n)
		if got := ref(b).String(); got != v.want {
			t.Errorf("zeebo/blake3 on %d bytes = %s, want %s", v.n, got, v.want)
		}
		checkSum(t, b)
		id, _, err := sumReaderAt(t.Context(), bytes.NewReader(b), int64(len(b)), 2, nil, false)
		if err != nil || id.String() != v.want {
			t.Errorf("SumReaderAt on %d bytes = %s, %v; want %s", v.n, id, err, v.want)
		}
	}
}

func TestSumEverySize(t *testing.T) {
	data := make([]byte, 4200)
	rand.New(rand.NewSource(2)).Read(data)
	for n := 0; n <= len(data); n++ {
		checkSum(t, data[:n])
	}
}

// testSizes are lengths around every power of two from 1 KiB to max, and
// around multiples of the 16 KiB CompressBuffer width.
func testSizes(max int) []int {
	var sizes []int
	for p := 1 << 10; p <= max; p <<= 1 {
		for _, d := range []int{-1023, -1, 0, 1, 1023} {
			sizes = append(sizes, p+d)
		}
	}
	for k := 1; k <= 40; k++ {
		sizes = append(sizes, k*bufLen-chunkLen-1, k*bufLen+chunkLen, k*bufLen+chunkLen+1)
	}
	return sizes
}

func TestSumSizes(t *testing.T) {
	max := 32 << 20
	if testing.Short() {
		max = 4 << 20
	}
	data := make([]byte, max+2*1023)
	rand.New(rand.NewSource(3)).Read(data)
	for _, n := range testSizes(max) {
		checkSum(t, data[:n])
		// An unaligned start must not matter.
		checkSum(t, data[1023-n%1023:][:n])
	}
}

func TestSumRandomSizes(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	data := make([]byte, 4<<20)
	rng.Read(data)
	for range 300 {
		n := rng.Intn(len(data) >> rng.Intn(12))
		off := rng.Intn(len(data) - n + 1)
		checkSum(t, data[off:off+n])
	}
}

func TestDigestWrites(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	data := make([]byte, 600<<10)
	rng.Read(data)
	pieces := []int{1, 63, 1024, 1025, bufLen - 1, bufLen, bufLen + 1, 3 * bufLen, 100 << 10}
	for _, piece := range pieces {
		d := New()
		for off := 0; off < len(data); off += piece {
			end := min(off+piece, len(data))
			d.Write(data[off:end])
			// ID is not destructive: check it as the digest grows.
			if w := off / piece; w&(w-1) == 0 || w%97 == 0 {
				if got, want := d.ID(), ref(data[:end]); got != want {
					t.Fatalf("%d-byte writes: ID after %d bytes = %s, want %s", piece, end, got.Short(), want.Short())
				}
			}
		}
		if got, want := d.ID(), ref(data); got != want {
			t.Fatalf("%d-byte writes: ID = %s, want %s", piece, got.Short(), want.Short())
		}
	}
	// Random pieces, and a Reset in between.
	var d Digest
	d.Write(data[:50000])
	d.Reset()
	for off := 0; off < len(data); {
		n := min(rng.Intn(40000), len(data)-off)
		d.Write(data[off : off+n])
		off += n
	}
	if d.ID() != ref(data) {
		t.Fatal("random writes after Reset: ID mismatch")
	}
}

func TestSumDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool (x16's state) drop items at random")
	}
	data := make([]byte, 1<<20+5000)
	for _, n := range []int{100, 40 << 10, 40<<10 + 1, 1 << 20, len(data)} {
		if a := testing.AllocsPerRun(20, func() { Sum(data[:n]) }); a != 0 {
			t.Errorf("Sum of %d bytes: %v allocations", n, a)
		}
	}
	d := New()
	if a := testing.AllocsPerRun(20, func() { d.Write(data); d.ID() }); a != 0 {
		t.Errorf("Digest.Write+ID: %v allocations", a)
	}
}

func FuzzSum(f *testing.F) {
	for _, n := range []int{0, 1, 64, 1024, 1025, smallLimit - 1, smallLimit, bufLen, bufLen + 1} {
		f.Add(pattern(n), uint32(0), uint32(n/3))
	}
	f.Add([]byte("chunkvc"), uint32(40<<10), uint32(16<<10))
	f.Add([]byte{0xff}, uint32(1<<17+1), uint32(1<<16))
	f.Add(pattern(300), uint32(3*bufLen-1), uint32(bufLen+1))
	f.Fuzz(func(t *testing.T, seed []byte, n, split uint32) {
		// The message is seed itself, then seed repeated to n%96 KiB bytes
		// so that short fuzz inputs reach the multi-buffer tree code too.
		msgs := [][]byte{seed}
		if m := int(n % (96 << 10)); m > 0 && len(seed) > 0 {
			msgs = append(msgs, bytes.Repeat(seed, m/len(seed)+1)[:m])
		}
		for _, msg := range msgs {
			checkSum(t, msg)
			s := int(split) % (len(msg) + 1)
			d := New()
			d.Write(msg[:s])
			d.Write(msg[s:])
			if got, want := d.ID(), ref(msg); got != want {
				t.Fatalf("Digest of %d bytes split at %d = %s, want %s", len(msg), s, got.Short(), want.Short())
			}
		}
	})
}

// BenchmarkSum compares Sum with zeebo/blake3 (the implementation it
// replaced) at a typical chunk size and a large one.
func BenchmarkSum(b *testing.B) {
	for _, n := range []int{40 << 10, 1 << 20} {
		data := make([]byte, n)
		rand.New(rand.NewSource(1)).Read(data)
		for _, impl := range []struct {
			name string
			sum  func([]byte) ID
		}{{"new", Sum}, {"zeebo", ref}} {
			b.Run(fmt.Sprintf("%s/%dKiB", impl.name, n>>10), func(b *testing.B) {
				b.SetBytes(int64(n))
				for b.Loop() {
					impl.sum(data)
				}
			})
		}
	}
}

// BenchmarkSumSmall places smallLimit: the guts tree code against zeebo on
// short inputs.
func BenchmarkSumSmall(b *testing.B) {
	data := make([]byte, 24<<10)
	rand.New(rand.NewSource(1)).Read(data)
	guts := func(b []byte) ID { return rootID(subtree(b, 0)) }
	for _, n := range []int{4 << 10, 8 << 10, 9<<10 + 512, 10 << 10, 10<<10 + 512, 12 << 10, 16<<10 - 1, 16 << 10} {
		for _, impl := range []struct {
			name string
			sum  func([]byte) ID
		}{{"guts", guts}, {"zeebo", ref}} {
			b.Run(fmt.Sprintf("%s/%d", impl.name, n), func(b *testing.B) {
				b.SetBytes(int64(n))
				for b.Loop() {
					impl.sum(data[:n])
				}
			})
		}
	}
}

// BenchmarkDigest streams 4 MiB in 64 KiB writes, as stream does when it
// reassembles a file.
func BenchmarkDigest(b *testing.B) {
	data := make([]byte, 4<<20)
	rand.New(rand.NewSource(1)).Read(data)
	for _, w := range []int{64 << 10, 1 << 20} { // a checkout writes 1 MiB at a time
		b.Run(fmt.Sprintf("new/%dKiB", w>>10), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			d := New()
			for b.Loop() {
				d.Reset()
				for off := 0; off < len(data); off += w {
					d.Write(data[off : off+w])
				}
				d.ID()
			}
		})
	}
	b.Run("zeebo", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		d := blake3.New()
		for b.Loop() {
			d.Reset()
			for off := 0; off < len(data); off += 64 << 10 {
				d.Write(data[off : off+64<<10])
			}
			d.Sum(nil)
		}
	})
}
