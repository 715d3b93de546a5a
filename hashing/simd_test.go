package hashing

import (
	"bytes"
	"math/rand"
	"testing"
	_ "unsafe" // go:linkname

	_ "lukechampine.com/blake3/guts"
)

// guts chooses between its AVX-512, AVX2 and pure-Go code in these package
// variables, set once from cpuid. Setting them here runs the narrower paths
// on a machine that has AVX-512, as they run on one that has not. If a guts
// upgrade renames them, this file stops linking: check the new version's
// dispatch and update the names.
//
//go:linkname gutsHaveAVX512 lukechampine.com/blake3/guts.haveAVX512
var gutsHaveAVX512 bool

//go:linkname gutsHaveAVX2 lukechampine.com/blake3/guts.haveAVX2
var gutsHaveAVX2 bool

func TestSumNarrowerSIMD(t *testing.T) {
	avx512, avx2 := gutsHaveAVX512, gutsHaveAVX2
	t.Cleanup(func() { gutsHaveAVX512, gutsHaveAVX2 = avx512, avx2 })
	if !avx512 {
		t.Log("no AVX-512 here: the default paths are the narrower ones already")
	}
	data := make([]byte, 3<<20+1)
	rand.New(rand.NewSource(12)).Read(data)
	var sizes []int
	for n := smallLimit - 1; n <= 3*bufLen+chunkLen+1; n += 97 {
		sizes = append(sizes, n)
	}
	sizes = append(sizes, testSizes(1<<20)...)
	for _, mode := range []struct {
		name         string
		avx512, avx2 bool
	}{{"AVX2", false, avx2}, {"generic", false, false}} {
		t.Run(mode.name, func(t *testing.T) {
			gutsHaveAVX512, gutsHaveAVX2 = mode.avx512, mode.avx2
			defer func() { gutsHaveAVX512, gutsHaveAVX2 = avx512, avx2 }()
			for _, n := range sizes {
				checkSum(t, data[:n])
			}
			got, _, err := sumReaderAt(t.Context(), bytes.NewReader(data), int64(len(data)), 3, nil, false)
			if want := ref(data); err != nil || got != want {
				t.Fatalf("SumReaderAt = %s, %v; want %s", got.Short(), err, want.Short())
			}
		})
	}
}

// TestScanWithoutX16 runs the hashers on the paths a CPU without AVX-512
// takes (guts for blocks, Sum per piece) and checks them against the x16
// paths' results: both must give zeebo/blake3's digest and IDs.
func TestScanWithoutX16(t *testing.T) {
	have := haveX16
	t.Cleanup(func() { haveX16 = have })
	data := make([]byte, 5<<20+12345)
	rand.New(rand.NewSource(13)).Read(data)
	var pieces []Range
	for off, k := int64(0), int64(1); off < int64(len(data)); k++ {
		n := min(k*7919%(90<<10), int64(len(data))-off)
		pieces = append(pieces, Range{Off: off, Len: n})
		off += n
	}
	for _, x := range []bool{false, have} {
		haveX16 = x
		ids := make([]ID, len(pieces))
		digest, _, err := Scan(t.Context(), bytes.NewReader(data), int64(len(data)), pieces, ScanOptions{Workers: 2}, func(i int, id ID, _ []byte) error {
			ids[i] = id
			return nil
		})
		if want := ref(data); err != nil || digest != want {
			t.Fatalf("x16=%v: Scan digest %s, %v; want %s", x, digest.Short(), err, want.Short())
		}
		for i, p := range pieces {
			if want := ref(data[p.Off : p.Off+p.Len]); ids[i] != want {
				t.Fatalf("x16=%v: piece %d = %s, want %s", x, i, ids[i].Short(), want.Short())
			}
		}
		got, _, err := sumReaderAt(t.Context(), bytes.NewReader(data), int64(len(data)), 2, nil, false)
		if want := ref(data); err != nil || got != want {
			t.Fatalf("x16=%v: SumReaderAt = %s, %v; want %s", x, got.Short(), err, want.Short())
		}
		d := NewBlocks()
		for rest := data; len(rest) > 0; rest = rest[min(len(rest), blockLen):] {
			d.Write(rest[:min(len(rest), blockLen)])
		}
		if got, _ := d.SumBlocks(); got != ref(data) {
			t.Fatalf("x16=%v: Digest = %s, want %s", x, got.Short(), ref(data).Short())
		}
	}
}
