//go:build linux && !race

package hashing

import "syscall"

// adviseHuge asks for transparent huge pages on b (2 MiB-aligned); where
// they are off, nothing changes.
func adviseHuge(b []byte) { _ = syscall.Madvise(b, syscall.MADV_HUGEPAGE) }
