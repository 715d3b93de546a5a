package hashing

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"testing"
)

// blockSizes straddle the cases of the block tree: two blocks exactly, a
// short last block, a 1-byte last block, a power-of-two count and an odd one.
var blockSizes = []int{2 * blockLen, 2*blockLen + 1, 3*blockLen - 7, 4 * blockLen, 5*blockLen + 1000}

func TestSumBlocksMatchesDigest(t *testing.T) {
	data := pattern(blockSizes[len(blockSizes)-1])
	for _, n := range blockSizes {
		for _, workers := range []int{1, 2, 3} {
			id, cvs, err := sumReaderAt(t.Context(), bytes.NewReader(data[:n]), int64(n), workers, nil, true)
			want := ref(data[:n])
			if err != nil || id != want {
				t.Fatalf("size %d workers %d: %s, %v; want %s", n, workers, id.Short(), err, want.Short())
			}
			if int64(len(cvs)) != blocksOf(int64(n)) {
				t.Fatalf("size %d: %d CVs", n, len(cvs))
			}
			if root, err := BlockRoot(cvs); err != nil || root != want {
				t.Fatalf("size %d: BlockRoot = %s, %v; want %s", n, root.Short(), err, want.Short())
			}
		}
	}
	if _, err := BlockRoot(make([]CV, 1)); err == nil {
		t.Error("BlockRoot of one CV: no error")
	}
}

// noReads fails any read that touches a block listed in skip: proof that a
// reused block is not read.
type noReads struct {
	r    io.ReaderAt
	skip map[int64]bool
}

func (n noReads) ReadAt(p []byte, off int64) (int, error) {
	for b := off / blockLen; b*blockLen < off+int64(len(p)); b++ {
		if n.skip[b] {
			return 0, fmt.Errorf("block %d read although reused", b)
		}
	}
	return n.r.ReadAt(p, off)
}

func TestSumBlocksReuse(t *testing.T) {
	for _, n := range blockSizes {
		v1 := pattern(n)
		_, old, err := SumBlocks(t.Context(), bytes.NewReader(v1), int64(n), nil)
		if err != nil {
			t.Fatal(err)
		}
		nb := int(blocksOf(int64(n)))
		for _, edited := range []int{0, nb / 2, nb - 1} {
			v2 := bytes.Clone(v1)
			v2[edited*blockLen+min(blockLen, n-edited*blockLen)/2] ^= 0x5a
			reuse := func(i int) bool { return i != edited }
			skip := map[int64]bool{}
			for i := range nb {
				skip[int64(i)] = reuse(i)
			}
			for _, workers := range []int{1, 2} {
				have := func(i int64) ([8]uint32, bool) {
					if !reuse(int(i)) {
						return [8]uint32{}, false
					}
					return old[i].words(), true
				}
				id, cvs, err := sumReaderAt(t.Context(), noReads{bytes.NewReader(v2), skip}, int64(n), workers, have, true)
				if want := ref(v2); err != nil || id != want {
					t.Fatalf("size %d, block %d edited, workers %d: %s, %v; want %s", n, edited, workers, id.Short(), err, want.Short())
				}
				if root, _ := BlockRoot(cvs); root != id {
					t.Fatalf("size %d: CVs give %s, digest %s", n, root.Short(), id.Short())
				}
			}
			// Reusing the edited block's old CV gives the old file's digest,
			// not the new one: the reused values are what the tree is built from.
			stale, _, err := SumBlocks(t.Context(), bytes.NewReader(v2), int64(n), func(i int) (CV, bool) { return old[i], true })
			if err != nil || stale != ref(v1) {
				t.Fatalf("size %d: every block reused gives %s, %v; want v1's %s", n, stale.Short(), err, ref(v1).Short())
			}
		}
	}
}

// TestDigestSumBlocks: the streaming Digest gives the same block chaining
// values as SumBlocks, however the bytes are cut into writes.
func TestDigestSumBlocks(t *testing.T) {
	sizes := append([]int{blockLen, blockLen + 1, 2*blockLen - bufLen, 2*blockLen - bufLen + 1, 64 * bufLen * 3}, blockSizes...)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range sizes {
		data := pattern(n)
		wantID, wantCVs, err := SumBlocks(t.Context(), bytes.NewReader(data), int64(n), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, piece := range []int{0, 1000, bufLen, blockLen, 2*blockLen + 3*bufLen + 7} {
			d := NewBlocks()
			for rest := data; len(rest) > 0; {
				k := piece
				if k == 0 {
					k = 1 + rng.IntN(3*bufLen)
				}
				k = min(k, len(rest))
				d.Write(rest[:k])
				rest = rest[k:]
			}
			id, cvs := d.SumBlocks()
			if id != wantID || !slices.Equal(cvs, wantCVs) {
				t.Fatalf("size %d, writes of %d: ID %s (want %s), %d CVs (want %d), equal %v", n, piece, id.Short(), wantID.Short(), len(cvs), len(wantCVs), slices.Equal(cvs, wantCVs))
			}
		}
	}
}
