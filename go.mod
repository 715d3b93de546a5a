module github.com/chunkvc/chunkvc

go 1.26.8

require (
	github.com/zeebo/blake3 v0.2.4
	golang.org/x/sync v0.25.0
)

require (
	github.com/klauspost/cpuid/v2 v2.4.0 // indirect
	github.com/zeebo/assert v1.3.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
