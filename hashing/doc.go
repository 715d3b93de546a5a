// Package hashing owns chunkvc's content identity: the ID type (BLAKE3-256 of
// a byte string) and a parallel hasher over byte ranges of a file.
//
// Glossary:
//
//	ID     32-byte BLAKE3 digest; written as 64 lower-case hex digits, or as
//	       "blake3:<hex>" where a text format needs to say what it is.
//	Range  an (offset, length) slice of a file; the hasher reads it with pread.
//
// Memory: HashRanges holds at most workers+1 buffers, each as large as the
// largest range, so memory is bounded by MaxRange × (workers+1), never by the
// file size.
package hashing
