//go:build (darwin || freebsd || netbsd || openbsd || dragonfly) && !linux

package hashing

const mapPopulate = 0
