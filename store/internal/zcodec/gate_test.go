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
