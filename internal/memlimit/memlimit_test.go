package memlimit

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
)

// A command whose live heap is twice its soft limit allocates 1 GB of
// short-lived buffers: with Track the collector runs about as often as
// without a limit; with the limit alone it ran after nearly every
// allocation.
func TestLiveHeapAboveLimit(t *testing.T) {
	defer debug.SetMemoryLimit(math.MaxInt64)
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	stop := Track(32 << 20)
	defer stop()
	live := make([][]byte, 64)
	for i := range live {
		live[i] = make([]byte, 1<<20) // 64 MB held throughout
	}
	runtime.GC()
	before := numGC()
	var sink []byte
	for range 65536 {
		sink = make([]byte, 16<<10)
		sink[0] = 1
	}
	runtime.KeepAlive(live)
	if n := numGC() - before; n > 100 {
		t.Fatalf("%d collections while 1 GB was allocated over a live heap of 64 MB; want at most 100", n)
	}
	_ = sink
}

// A command that fits keeps its limit.
func TestLimitKeptWhenHeapFits(t *testing.T) {
	defer debug.SetMemoryLimit(math.MaxInt64)
	stop := Track(256 << 20)
	defer stop()
	for range 4 {
		runtime.GC()
	}
	if got := debug.SetMemoryLimit(-1); got != 256<<20 {
		t.Fatalf("limit %d after collections of a small heap; want %d", got, 256<<20)
	}
}

func numGC() uint32 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.NumGC
}
