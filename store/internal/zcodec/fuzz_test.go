package zcodec

import (
	"bytes"
	"math"
	"testing"

	"github.com/chunkvc/chunkvc/store/internal/packidx"
)

// FuzzDecodeDelta: any stored bytes, base and size (a pack index bounds
// sizes; here up to two segments) decode to exactly size bytes or fail,
// never panic; and data encoded against base, as stored is taken to be,
// decodes back to it.
func FuzzDecodeDelta(f *testing.F) {
	base := randomBytes(3000, 1)
	data := edited(base, 2, 100)
	d, err := EncodeDelta(data, base, math.MaxInt)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(d, base, uint32(len(data)))
	f.Add(d, base, uint32(len(data)-1))
	f.Add(d, base[:1000], uint32(len(data)))
	f.Add(d[:len(d)/2], base, uint32(len(data)))
	f.Add([]byte{}, []byte{}, uint32(0))
	f.Add([]byte("\x28\xb5\x2f\xfd\x00\x58\x01\x00\x00x"), []byte("x"), uint32(1)) // a zstd frame, one raw byte
	f.Add(bytes.Repeat([]byte{0xa5}, 64), base, uint32(packidx.DeltaSegment+1))
	f.Fuzz(func(t *testing.T, stored, base []byte, size uint32) {
		n := int64(size % (2*packidx.DeltaSegment + 1))
		out, err := DecodeDelta(stored, base, n)
		if err == nil && int64(len(out)) != n {
			t.Fatalf("decoded %d bytes without an error, want %d", len(out), n)
		}
		if len(stored) == 0 || len(base) == 0 {
			return // EncodeDelta makes no delta of or against nothing
		}
		d, err := EncodeDelta(stored, base, math.MaxInt)
		if err != nil {
			t.Fatal(err)
		}
		if d == nil {
			t.Fatal("no delta under an unbounded limit")
		}
		got, err := DecodeDelta(d, base, int64(len(stored)))
		if err != nil {
			t.Fatalf("decode of a fresh delta: %v", err)
		}
		if !bytes.Equal(got, stored) {
			t.Fatal("round trip changed the bytes")
		}
	})
}
