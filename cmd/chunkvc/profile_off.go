//go:build !profile

package main

// startProfile does nothing: release binaries carry no profiling hooks.
// Build with -tags profile (make build PROFILE=1, as make bench does) for
// the CHUNKVC_CPUPROFILE, CHUNKVC_TRACE and CHUNKVC_MEMPROFILE variables.
func startProfile(*globalOptions) (stop func()) { return func() {} }
