package zcodec

import (
	"bytes"
	"math/rand"
	"runtime"
	"sync"
	"testing"

	"github.com/chunkvc/chunkvc/store/internal/packidx"
)

// edited returns base with its second half rewritten (random bytes do
// not compress: a delta can only gain from the copy of the first half),
// grown or shrunk by grow bytes.
func edited(base []byte, seed int64, grow int) []byte {
	out := append([]byte(nil), base[:len(base)/2]...)
	tail := make([]byte, len(base)-len(base)/2+grow)
	rand.New(rand.NewSource(seed)).Read(tail)
	return append(out, tail...)
}

func randomBytes(n int, seed int64) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

// TestDeltaRoundTrip: deltas of tile-sized objects (one window for all
// sizes) and of objects over one segment decode to the data, and use
// the copy of the base.
func TestDeltaRoundTrip(t *testing.T) {
	for i, n := range []int{300, 40 << 10, 100 << 10, 190 << 10, 250 << 10, packidx.DeltaSegment + 300<<10} {
		base := randomBytes(n, int64(i))
		data := edited(base, int64(100+i), i*1000)
		d, err := EncodeDelta(data, base, len(data))
		if err != nil {
			t.Fatal(err)
		}
		if d == nil {
			t.Fatalf("%d bytes: no delta, though half the data is the base's", len(data))
		}
		if len(d) > len(data)*3/4 {
			t.Errorf("%d bytes: delta of %d bytes, want at most 3/4 (half is a copy)", len(data), len(d))
		}
		got, err := DecodeDelta(d, base, int64(len(data)))
		if err != nil {
			t.Fatalf("%d bytes: %v", len(data), err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("%d bytes: decoded bytes differ", len(data))
		}
	}
	// Over the limit: nil, and the encoder goes back for the next one.
	base := randomBytes(50<<10, 9)
	if d, err := EncodeDelta(randomBytes(50<<10, 10), base, 1000); err != nil || d != nil {
		t.Fatalf("unrelated data under a 1000-byte limit: %d bytes, %v; want nil", len(d), err)
	}
}

// TestDeltaEncodersReused: small deltas of any size are encoded by the
// same few encoders, made once for the process, even when many are
// encoded at once (a changed tile met by every scan worker).
func TestDeltaEncodersReused(t *testing.T) {
	one := func(i int) {
		base := randomBytes(20<<10+i%20*7919, int64(i)) // base and data within smallDelta
		data := edited(base, int64(i+1000), i%5)
		d, err := EncodeDelta(data, base, len(data))
		if err != nil {
			t.Error(err)
			return
		}
		if got, err := DecodeDelta(d, base, int64(len(data))); err != nil || !bytes.Equal(got, data) {
			t.Errorf("delta %d does not decode to its data (%v)", i, err)
		}
	}
	one(0) // an encoder of the small kind exists
	before := encodersMade.Load()
	for i := 1; i <= 20; i++ {
		one(i)
	}
	if n := encodersMade.Load() - before; n != 0 {
		t.Fatalf("20 deltas one after another made %d more encoders, want none", n)
	}
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() { one(100 + i) })
	}
	wg.Wait()
	if n, most := encodersMade.Load()-before, int64(min(runtime.GOMAXPROCS(0), keepEncoders)); n > most {
		t.Fatalf("32 deltas at once made %d more encoders, want at most %d", n, most)
	}
}
