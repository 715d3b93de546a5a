// Package memlimit keeps the Go heap's soft limit (debug.SetMemoryLimit)
// from turning into a collection loop.
//
// chunkvc sets a soft limit per command so that the heap of an ordinary
// file stays well under 300 MB of RSS. A command whose live heap is larger
// than that limit (a dataset of a million chunks holds about 400 MB) would
// have the collector run again as soon as any memory is allocated: a
// checkout of such a dataset spent 330 s of CPU, most of it collecting.
// Track raises the limit, after a collection, to twice the live heap once
// the live heap passes three quarters of it, so that such a command
// collects as often as an unlimited one (GOGC 100) would, and a command
// that fits keeps its limit.
//
// Glossary: live heap is what the last collection found reachable
// (runtime/metrics "/gc/heap/live:bytes"); the limit is the runtime's soft
// memory limit, which Track only ever raises.
package memlimit

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

const liveMetric = "/gc/heap/live:bytes"

// Track sets the soft memory limit to base and keeps it above the live
// heap as described in the package documentation, until stop is called.
// It checks after every collection (a finalizer the collector runs), so
// it reacts before the next collection, not on a timer.
func Track(base int64) (stop func()) {
	debug.SetMemoryLimit(base)
	var done atomic.Bool
	limit := base
	sample := []metrics.Sample{{Name: liveMetric}}
	var after func()
	after = func() {
		if done.Load() {
			return
		}
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 {
			live := sample[0].Value.Uint64()
			if live < math.MaxInt64/2 && int64(live) > limit/4*3 {
				limit = 2 * int64(live)
				debug.SetMemoryLimit(limit)
			}
		}
		arm(after)
	}
	arm(after)
	return func() { done.Store(true) }
}

// sentinel is an object made only to be collected: its finalizer is the
// hook Track runs after each collection. It holds a pointer so that it is
// never one of the tiny allocations whose finalizers may never run.
type sentinel struct{ p *int }

// arm makes a new sentinel whose finalizer runs f.
func arm(f func()) {
	runtime.SetFinalizer(&sentinel{p: new(int)}, func(*sentinel) { f() })
}
