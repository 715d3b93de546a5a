//go:build !amd64 || purego

package hashing

var haveX16 = false // a variable so that tests can set it on any platform

func x16(*lanes16) { panic("hashing: x16 without AVX-512") }
