// Package hashing owns chunkvc's content identity: the ID type (BLAKE3-256 of
// a byte string) and parallel hashers over a file: its ranges, its digest,
// or both from one read (Scan).
//
// Glossary:
//
//	ID     32-byte BLAKE3 digest; written as 64 lower-case hex digits, or as
//	       "blake3:<hex>" where a text format needs to say what it is.
//	Range  an (offset, length) slice of a file; the hasher reads it with pread.
//	chunk  BLAKE3's 1 KiB leaf; the tree's chunks have nothing to do with
//	       chunkvc's chunks (content ranges).
//
// Implementation: Sum and Digest build the BLAKE3 tree over
// lukechampine.com/blake3/guts, whose CompressBuffer hashes 16 chunks at
// once with AVX-512 (AVX2 or pure Go on other CPUs), about 1.4× as fast per
// core as zeebo/blake3's 8-lane AVX2. Inputs under 10 KiB still go to
// zeebo/blake3, which is faster there. The tree shape is BLAKE3's:
// 16-chunk buffers, each a complete subtree, go on a stack that merges
// equal-sized subtrees as in the paper's lazy merge; the last 1..16 chunks
// (the empty chunk for empty input) are held back and merged by
// CompressBuffer, whose pairwise merge gives the same shape as BLAKE3's
// eigentrees folded from the right; then the stack folds onto that node
// and the last parent gets the root flag. SumReaderAt hashes 1 MiB blocks
// (complete 1024-chunk subtrees) on a worker pool and pushes their chaining
// values onto the same kind of stack in file order. SumBlocks also returns
// those chaining values (CV), and takes a block's CV instead of reading it
// when the caller vouches that its bytes did not change: the digest of a
// file edited in place then costs the changed blocks only (BlockRoot
// rebuilds a digest from CVs, to check them).
//
// On amd64 with AVX-512 (F and BW), the blocks of SumReaderAt and Scan and the pieces
// of Scan and SumMany go through chunkvc's own kernel instead, x16 (written
// by internal/x16gen): 16 independent lanes, each with its own input,
// counter, flags and number of 64-byte blocks, so one step can hold chunks
// of many tiles, a tile's last short chunk, or 16 parent nodes. guts fills
// its 16 lanes from one buffer only (a 40 KiB tile leaves 8 of its third
// step empty) and hashes a short last chunk in scalar Go; its loads are
// gathers. x16 loads each lane's block and transposes the 16×16 words in
// registers, keeps the state and the message in the 32 ZMM registers, and
// rotates by 16 and 8 with byte shuffles, which run on another port than
// the rotates by 12 and 7 (BenchmarkX16, BenchmarkSumMany). The pairwise
// merge of a piece's chunk values level by level gives BLAKE3's tree:
// the largest power of two on the left at every node.
//
// Scan is what a commit uses: it reads a file once, in 2 MiB windows (a
// multiple of the block, so no block spans two), and from the same bytes
// hashes each piece of the file's layout and each block for the digest. A
// piece is hashed by the task of the window holding its last byte (copied
// together when it starts in an earlier window); a block by whichever task
// finishes the last piece over it, so a reused block's CV is asked for only
// when the pieces that vouch for it are known. Windows are reference
// counted (their task, the pieces crossing out of them, their blocks) and
// live outside the Go heap. Given ScanOptions.Quick, Scan also takes each
// piece's XXH3-128 under the caller's seed (Quick, 8-10 GB/s a core) and
// hashes with BLAKE3 only the pieces whose Quick the caller does not know
// from an earlier read.
//
// Memory: HashRanges holds at most one buffer per worker, each as large as the
// largest range, so memory is bounded by MaxRange × workers, never by the
// file size. SumReaderAt holds one 1 MiB block per worker: a read-only
// mapping of an *os.File on Unix (no copy), else a pooled buffer.
package hashing
