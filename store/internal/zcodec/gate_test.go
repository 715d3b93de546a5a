package zcodec

import "testing"

// TestGate: everything is tried until the warm-up; a run that never pays
// is then tried once in gateEvery; trials that pay open the gate again.
func TestGate(t *testing.T) {
	var g Gate
	tries := func(n int, paid bool) int {
		k := 0
		for range n {
			if g.try() {
				k++
				g.record(paid)
			}
		}
		return k
	}
	if k := tries(gateWarmup, false); k != gateWarmup {
		t.Fatalf("warm-up: %d of %d tried", k, gateWarmup)
	}
	if k := tries(16*gateEvery, false); k != 16 {
		t.Errorf("after the warm-up, with nothing paying: %d of %d tried, want 16", k, 16*gateEvery)
	}
	// untilTried offers compressible objects until one is tried; it
	// returns how many were offered.
	untilTried := func() int {
		for n := 1; ; n++ {
			if g.try() {
				g.record(true)
				return n
			}
		}
	}
	// Compressible objects arrive: the first one tried opens the gate.
	if n := untilTried(); n > gateEvery {
		t.Errorf("%d compressible objects offered before one was tried", n)
	}
	if k := tries(100, true); k != 100 {
		t.Errorf("once a trial paid: %d of 100 tried, want all", k)
	}
	// A long incompressible run closes it again: once the ~101 trials that
	// paid are outnumbered 16 to 1.
	if k := tries(100000, false); k > 101*gateEvery+100000/gateEvery {
		t.Errorf("100000 incompressible objects: %d tried", k)
	}
	if n := untilTried(); n > gateEvery {
		t.Errorf("after a long run, %d compressible objects offered before one was tried", n)
	}
	if k := tries(100, true); k != 100 {
		t.Errorf("reopened: %d of 100 tried", k)
	}
	var none *Gate
	if !none.try() {
		t.Error("a nil gate skipped a trial")
	}
	none.record(true)
}

// TestGateCompress: small objects are neither tried nor counted; others are
// compressed when the gate is open.
func TestGateCompress(t *testing.T) {
	var g Gate
	buf := new([]byte)
	if z, err := g.Compress([]byte("tiny"), buf); z != nil || err != nil || g.tried.Load() != 0 {
		t.Fatalf("tiny object: %d bytes, %v, %d trials counted", len(z), err, g.tried.Load())
	}
	text := []byte{}
	for len(text) < 64<<10 {
		text = append(text, "station 7, temperature 12.5, humidity 40\n"...)
	}
	z, err := g.Compress(text, buf)
	if err != nil || z == nil || len(z) >= len(text)/2 || g.tried.Load() != 1 || g.paid.Load() != 1 {
		t.Fatalf("text: %d bytes of %d, %v; %d tried, %d paid", len(z), len(text), err, g.tried.Load(), g.paid.Load())
	}
	if back, err := Decompress(z, int64(len(text))); err != nil || string(back) != string(text) {
		t.Fatalf("decompress: %d bytes, %v", len(back), err)
	}
}
