//go:build amd64 && !purego

package hashing

import "golang.org/x/sys/cpu"

//go:generate go run ./internal/x16gen -out x16_amd64.s

// haveX16 says whether x16 runs here: it needs AVX-512 Foundation (and the
// OS saving the ZMM registers, which cpu checks).
var haveX16 = cpu.X86.HasAVX512F

// x16 runs the lanes of j (see lanes16). It is written by x16gen.
//
//go:noescape
func x16(j *lanes16)
