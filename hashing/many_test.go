package hashing

import (
	"bytes"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"unsafe"

	"lukechampine.com/blake3/guts"
)

// TestLanes16Layout pins the offsets x16gen writes into the assembly.
func TestLanes16Layout(t *testing.T) {
	var j lanes16
	for _, f := range []struct {
		name      string
		got, want uintptr
	}{
		{"ptr", unsafe.Offsetof(j.ptr), 0}, {"dst", unsafe.Offsetof(j.dst), 128},
		{"ctrLo", unsafe.Offsetof(j.ctrLo), 256}, {"ctrHi", unsafe.Offsetof(j.ctrHi), 320},
		{"last", unsafe.Offsetof(j.last), 384}, {"lastLen", unsafe.Offsetof(j.lastLen), 448},
		{"base", unsafe.Offsetof(j.base), 512}, {"start", unsafe.Offsetof(j.start), 576},
		{"end", unsafe.Offsetof(j.end), 640}, {"blocks", unsafe.Offsetof(j.blocks), 704},
	} {
		if f.got != f.want {
			t.Errorf("lanes16.%s at %d, x16gen reads it at %d", f.name, f.got, f.want)
		}
	}
}

// TestSumMany checks SumMany against zeebo/blake3 on sets of pieces that
// mix every kind of lane: empty, short, whole chunks, a short last chunk,
// several 16-chunk steps, and pieces too long to batch.
func TestSumMany(t *testing.T) {
	if !haveX16 {
		t.Log("no AVX-512 here: SumMany is Sum in a loop")
	}
	rng := rand.New(rand.NewSource(7))
	data := make([]byte, 8<<20)
	rng.Read(data)
	sizes := append(testSizes(70<<10), 0, 63, 64, 65, maxManyChunks*chunkLen, maxManyChunks*chunkLen+1, 5<<20)
	check := func(name string, pieces [][]byte) {
		t.Helper()
		out := make([]ID, len(pieces)+1)
		sentinel := ID{1}
		out[len(pieces)] = sentinel
		SumMany(pieces, out)
		for i, p := range pieces {
			if want := ref(p); out[i] != want {
				t.Fatalf("%s: piece %d of %d (%d bytes) = %s, want %s", name, i, len(pieces), len(p), out[i].Short(), want.Short())
			}
		}
		if out[len(pieces)] != sentinel {
			t.Fatalf("%s: SumMany wrote past its pieces", name)
		}
	}
	for _, n := range sizes {
		check("one", [][]byte{data[:n]})
	}
	for round := range 200 {
		k := 1 + rng.Intn(40)
		pieces := make([][]byte, k)
		for i := range pieces {
			var n int
			switch rng.Intn(4) {
			case 0:
				n = sizes[rng.Intn(len(sizes))]
			case 1:
				n = rng.Intn(3 * chunkLen)
			default:
				n = 20<<10 + rng.Intn(60<<10)
			}
			off := rng.Intn(len(data) - n + 1)
			pieces[i] = data[off : off+n]
		}
		check("mixed "+string(rune('a'+round%26)), pieces)
	}
}

// TestSubtreeCV checks the chaining values SumMany's lanes give a subtree
// (a block of a file's digest) against guts, at chunk counters on both
// sides of 2^32, where the counter's high word starts to count.
func TestSubtreeCV(t *testing.T) {
	if !haveX16 {
		t.Skip("no AVX-512 here: subtrees are hashed by guts only")
	}
	data := make([]byte, blockLen)
	rand.New(rand.NewSource(8)).Read(data)
	var m many
	for _, counter := range []uint64{0, 1024, 1<<32 - 1024, 1 << 32, 1<<40 + 3072} {
		for _, n := range []int{1, chunkLen, chunkLen + 1, 17 * chunkLen, blockLen - 1, blockLen} {
			want := guts.ChainingValue(subtree(data[:n], counter))
			if got := m.subtreeCV(data[:n], counter); got != want {
				t.Fatalf("subtree of %d bytes at chunk %d: chaining values differ", n, counter)
			}
		}
	}
}

// BenchmarkX16 is the kernel alone: 16 lanes of whole chunks, in cache.
func BenchmarkX16(b *testing.B) {
	if !haveX16 {
		b.Skip("no AVX-512 here")
	}
	data := make([]byte, 16*chunkLen)
	var j lanes16
	var sink [8]uint32
	for l := range 16 {
		j.ptr[l], j.dst[l] = unsafe.Pointer(&data[l*chunkLen]), &sink
		j.last[l], j.lastLen[l] = 15, 64
	}
	j.blocks = 16
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		x16(&j)
	}
}

// BenchmarkSumMany hashes a COG's worth of tile-sized pieces (20..60 KiB,
// random lengths) with SumMany and with Sum one at a time.
func BenchmarkSumMany(b *testing.B) {
	rng := rand.New(rand.NewSource(3))
	data := make([]byte, 32<<20)
	rng.Read(data)
	var pieces [][]byte
	for off := 0; ; {
		n := 20<<10 + rng.Intn(40<<10)
		if off+n > len(data) {
			break
		}
		pieces = append(pieces, data[off:off+n])
		off += n
	}
	out := make([]ID, len(pieces))
	var total int64
	for _, p := range pieces {
		total += int64(len(p))
	}
	b.Run("SumMany", func(b *testing.B) {
		b.SetBytes(total)
		for b.Loop() {
			SumMany(pieces, out)
		}
	})
	b.Run("Sum", func(b *testing.B) {
		b.SetBytes(total)
		for b.Loop() {
			for i, p := range pieces {
				out[i] = Sum(p)
			}
		}
	})
}

// TestX16Generated checks that x16_amd64.s is what x16gen writes now: the
// assembly is generated, and a generator change must not be left
// unapplied (or a hand edit of the output pass unnoticed).
func TestX16Generated(t *testing.T) {
	out := filepath.Join(t.TempDir(), "x16.s")
	cmd := exec.Command("go", "run", "./internal/x16gen", "-out", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go run ./internal/x16gen: %v\n%s", err, b)
	}
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("x16_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("x16_amd64.s differs from what x16gen writes: run go generate ./hashing")
	}
}

// FuzzSumMany cuts a message into pieces at lengths taken from cuts (two
// bytes each, scaled up to 80 KiB) and checks every piece's ID from one
// SumMany call against zeebo/blake3: the fuzzer chooses which lengths
// share a step of 16 lanes, and where each piece's short last chunk falls.
func FuzzSumMany(f *testing.F) {
	f.Add(pattern(100), []byte{0, 0, 0, 1, 4, 0, 0xff, 0xff})
	f.Add([]byte("chunkvc"), []byte{0x10, 0x01, 0x00, 0x40, 0x3f, 0xff})
	f.Add(pattern(5000), []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18})
	f.Fuzz(func(t *testing.T, seed, cuts []byte) {
		if len(seed) == 0 || len(cuts) > 128 {
			return
		}
		var lens []int
		total := 0
		for i := 0; i+1 < len(cuts); i += 2 {
			n := (int(cuts[i])<<8 | int(cuts[i+1])) * 80 << 10 >> 16
			lens = append(lens, n)
			total += n
		}
		msg := bytes.Repeat(seed, total/len(seed)+1)[:total]
		pieces := make([][]byte, len(lens))
		at := 0
		for i, n := range lens {
			pieces[i] = msg[at : at+n]
			at += n
		}
		out := make([]ID, len(pieces))
		SumMany(pieces, out)
		for i, p := range pieces {
			if want := ref(p); out[i] != want {
				t.Fatalf("piece %d of %d (%d bytes) = %s, want %s", i, len(pieces), len(p), out[i].Short(), want.Short())
			}
		}
	})
}
