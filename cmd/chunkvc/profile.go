//go:build profile

package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"runtime/trace"
)

// startProfile writes a CPU profile to $CHUNKVC_CPUPROFILE, an execution
// trace to $CHUNKVC_TRACE and a heap profile taken near the command's
// largest live heap to $CHUNKVC_MEMPROFILE, each when set: how the
// performance work of docs/BENCHMARKS.md finds where time and memory go,
// and where a command waits rather than computes.
func startProfile(g *globalOptions) (stop func()) {
	stopCPU := startOutput(g, "CHUNKVC_CPUPROFILE", pprof.StartCPUProfile, pprof.StopCPUProfile)
	stopTrace := startOutput(g, "CHUNKVC_TRACE", trace.Start, trace.Stop)
	stopHeap := startHeapProfile(g, os.Getenv("CHUNKVC_MEMPROFILE"))
	return func() {
		stopHeap()
		stopTrace()
		stopCPU()
	}
}

// startOutput creates the file named by the environment variable env, if
// set, and starts writing to it; stop ends that and closes the file.
func startOutput(g *globalOptions, env string, start func(io.Writer) error, end func()) (stop func()) {
	path := os.Getenv(env)
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = start(f)
	}
	if err != nil {
		fmt.Fprintf(g.stderr, "chunkvc: %s: %v\n", env, err)
		return func() {}
	}
	return func() {
		end()
		f.Close()
	}
}
