package zcodec

import "testing"

// TestGate: everything is tried until the warm-up; a run that never pays
// is then tried once in gateEvery; trials that pay open the gate again.
func TestGate(t *testing.T) {
	var g Gate
	tries := func(n int, paid bool) int {
		k := 0
		for range n {
			if g.Try() {
				k++
				g.Record(paid)
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
	tries(20*gateEvery, true) // compressible objects arrive
	if k := tries(100, true); k != 100 {
		t.Errorf("once trials pay again: %d of 100 tried, want all", k)
	}
	var none *Gate
	if !none.Try() {
		t.Error("a nil gate skipped a trial")
	}
	none.Record(true)
}
