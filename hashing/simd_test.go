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
