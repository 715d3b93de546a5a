//go:build amd64 && !purego

package hashing

import "golang.org/x/sys/cpu"

//go:generate go run ./internal/x16gen -out x16_amd64.s

// haveX16 says whether x16 runs here: it needs AVX-512 Foundation, and
// Byte and Word for VPSHUFB on ZMM registers (the OS saving the ZMM
// registers is part of what cpu checks).
var haveX16 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW

// x16 runs the lanes of j (see lanes16). It is written by x16gen.
//
//go:noescape
func x16(j *lanes16)
