package tiff

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/chunkvc/chunkvc/formats/formattest"
)

// spliceCheck replaces every third non-empty, unshared block of data with
// a block of different length and checks, by walking the result, that
// exactly those blocks changed and every other block kept its bytes.
func spliceCheck(t testing.TB, data []byte) {
	t.Helper()
	tm, err := walkSparse(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return // not a TIFF the walk follows: Splice refuses it too
	}
	uses := map[uint64]int{}
	for _, b := range tm.blocks {
		uses[b.off]++
	}
	var src bytes.Buffer
	var repl []Replacement
	want := map[int][]byte{}
	for i, b := range tm.blocks {
		if b.n == 0 || b.off == 0 || uses[b.off] > 1 || i%3 != 0 {
			continue
		}
		nb := []byte(fmt.Sprintf("new block %d, longer than before: %x", i, data[b.off:b.off+min(b.n, 40)]))
		if b.cntF.width == 2 && len(nb) > 0xffff {
			continue
		}
		repl = append(repl, Replacement{Off: int64(b.off), SrcOff: int64(src.Len()), N: int64(len(nb))})
		src.Write(nb)
		want[i] = nb
	}
	srcR := bytes.NewReader(src.Bytes())
	for i := range repl {
		repl[i].Src = srcR
	}
	var out bytes.Buffer
	n, err := Splice(&out, bytes.NewReader(data), int64(len(data)), repl)
	if err != nil {
		t.Logf("refused: %v", err)
		return // refused: fine, as long as it did not panic
	}
	if n != int64(out.Len()) {
		t.Fatalf("Splice reports %d bytes, wrote %d", n, out.Len())
	}
	if in := spliceInPlace(t, data, repl); !bytes.Equal(in, out.Bytes()) {
		t.Fatalf("spliced in place (Head, then WriteFrom Tail): %d bytes, differs from Splice's %d", len(in), out.Len())
	}
	got, err := walkSparse(bytes.NewReader(out.Bytes()), int64(out.Len()))
	if err != nil {
		t.Fatalf("spliced file does not parse: %v", err)
	}
	if len(got.blocks) != len(tm.blocks) {
		t.Fatalf("%d blocks, want %d", len(got.blocks), len(tm.blocks))
	}
	for i, b := range got.blocks {
		old := tm.blocks[i]
		exp := data[old.off : old.off+old.n]
		if w, ok := want[i]; ok {
			exp = w
		}
		if !bytes.Equal(out.Bytes()[b.off:b.off+b.n], exp) {
			t.Fatalf("block %d: bytes differ after the splice", i)
		}
	}
}

// spliceInPlace splices a copy of data as a merge does in place: the
// original bytes before Tail are kept but for Head, patched, and the
// rest written from Tail on.
func spliceInPlace(t testing.TB, data []byte, repl []Replacement) []byte {
	t.Helper()
	sp, err := PlanSplice(bytes.NewReader(data), int64(len(data)), repl)
	if err != nil {
		t.Fatalf("PlanSplice refuses what Splice took: %v", err)
	}
	off, end := sp.Head()
	if off > end || end > sp.Tail() || sp.Tail() > int64(len(data)) {
		t.Fatalf("head [%d, %d), tail %d of %d bytes", off, end, sp.Tail(), len(data))
	}
	f := bytes.Clone(data[:sp.Tail()])
	sp.PatchHead(f[off:end], off)
	var tail bytes.Buffer
	// Only the bytes from Tail on are given: WriteFrom must not read before.
	n, err := sp.WriteFrom(&tail, offsetReader{bytes.NewReader(data[sp.Tail():]), sp.Tail()}, sp.Tail())
	if err != nil || n != int64(tail.Len()) {
		t.Fatalf("WriteFrom: %d bytes, %v", n, err)
	}
	f = append(f, tail.Bytes()...)
	if int64(len(f)) != sp.Size() {
		t.Fatalf("spliced in place to %d bytes, Size says %d", len(f), sp.Size())
	}
	return f
}

// offsetReader reads r as the bytes from off on of a file, and fails
// before off.
type offsetReader struct {
	r   io.ReaderAt
	off int64
}

func (o offsetReader) ReadAt(p []byte, off int64) (int, error) {
	if off < o.off {
		return 0, fmt.Errorf("read at %d, before %d", off, o.off)
	}
	return o.r.ReadAt(p, off-o.off)
}

func TestSpliceCorpus(t *testing.T) {
	spliced := 0
	for _, f := range formattest.Corpus(t, ".tif", ".tiff") {
		t.Run(f.Name, func(t *testing.T) { spliceCheck(t, f.Data) })
		if _, err := walkSparse(bytes.NewReader(f.Data), int64(len(f.Data))); err == nil {
			spliced++
		}
	}
	if spliced == 0 {
		t.Fatal("no corpus file was spliced")
	}
}

func TestSpliceRefusesUnknownBlock(t *testing.T) {
	for _, f := range formattest.Corpus(t, ".tif") {
		if _, err := walkSparse(bytes.NewReader(f.Data), int64(len(f.Data))); err != nil {
			continue
		}
		_, err := Splice(&bytes.Buffer{}, bytes.NewReader(f.Data), int64(len(f.Data)), []Replacement{{Off: 3, Src: bytes.NewReader([]byte("abcd")), N: 4}})
		if err == nil {
			t.Fatalf("%s: a replacement at offset 3 was accepted", f.Name)
		}
		return
	}
	t.Fatal("no corpus TIFF")
}

func FuzzSplice(f *testing.F) {
	formattest.Seeds(f, "cog.tiff", "utm.tif", "cog_no_offest.tif")
	f.Fuzz(func(t *testing.T, data []byte) { spliceCheck(t, data) })
}

// The skeleton digest ignores where blocks are and what they hold, and
// sees a change of any tag value.
func TestSkeleton(t *testing.T) {
	checked := 0
	for _, f := range formattest.Corpus(t, ".tif", ".tiff") {
		tm, err := walkSparse(bytes.NewReader(f.Data), int64(len(f.Data)))
		if err != nil || len(tm.blocks) == 0 {
			continue
		}
		b := tm.blocks[0]
		if b.n == 0 || b.off == 0 {
			continue
		}
		want, err := Skeleton(bytes.NewReader(f.Data), int64(len(f.Data)))
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		src := bytes.NewReader([]byte("a replacement block of another length"))
		var out bytes.Buffer
		if _, err := Splice(&out, bytes.NewReader(f.Data), int64(len(f.Data)), []Replacement{{Off: int64(b.off), Src: src, N: src.Size()}}); err != nil {
			continue
		}
		got, err := Skeleton(bytes.NewReader(out.Bytes()), int64(out.Len()))
		if err != nil || got != want {
			t.Fatalf("%s: skeleton changed by a splice: %v", f.Name, err)
		}
		// ImageWidth (256), always inline: its first byte changes.
		var width *spTag
		for i := range tm.tags {
			if tm.tags[i].tag == 256 {
				width = &tm.tags[i]
				break
			}
		}
		if width == nil {
			continue
		}
		edited := bytes.Clone(f.Data)
		edited[width.pos] ^= 1
		if got, err := Skeleton(bytes.NewReader(edited), int64(len(edited))); err == nil && got == want {
			t.Fatalf("%s: skeleton blind to an ImageWidth change", f.Name)
		}
		checked++
	}
	if checked < 3 {
		t.Fatalf("only %d corpus files checked", checked)
	}
}
