//go:build profile

package main

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"time"
)

// startHeapProfile writes, when path is set, the heap profile of the
// moment the live heap was largest, as far as a look every 20 ms sees it:
// the end of a command shows what it kept, not what its peak held. The
// profile is taken in memory at each new peak (by a tenth or more), after
// a collection so that it shows that peak, and written to path when the
// command ends. It slows the command: a diagnostic only.
func startHeapProfile(g *globalOptions, path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	runtime.MemProfileRate = 64 << 10
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	done := make(chan struct{})
	finished := make(chan struct{})
	var best bytes.Buffer
	var peak uint64
	take := func() {
		metrics.Read(sample)
		live := sample[0].Value.Uint64()
		if live < peak+peak/10 {
			return
		}
		runtime.GC() // the profile shows the heap as of the last collection
		metrics.Read(sample)
		peak = max(peak, sample[0].Value.Uint64())
		best.Reset()
		_ = pprof.Lookup("heap").WriteTo(&best, 0)
	}
	go func() {
		defer close(finished)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				take()
			case <-done:
				take()
				return
			}
		}
	}()
	return func() {
		close(done)
		<-finished
		if err := os.WriteFile(path, best.Bytes(), 0o644); err != nil {
			fmt.Fprintf(g.stderr, "chunkvc: CHUNKVC_MEMPROFILE: %v\n", err)
			return
		}
		fmt.Fprintf(g.stderr, "chunkvc: CHUNKVC_MEMPROFILE: live heap peaked near %.1f MB\n", float64(peak)/1e6)
	}
}
