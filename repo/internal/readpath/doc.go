// Package readpath is where chunk bytes come from when a repository
// reads them, nearest first: the embedded store, alternates, the read
// cache, and finally the configured store, whose chunks are then kept in
// the cache within its bound.
//
// Contract: Get returns verified bytes only (every store read goes
// through store.ReadAll) and says where they came from. The cache is
// best effort: a failed put, touch or eviction never fails a read. A
// Path is safe for concurrent use.
//
//	.git/chunkvc/store        the embedded store (Local)
//	.git/chunkvc/alternates   absolute paths of read-only stores, one a line;
//	                          # comments; other lines (URLs, relative or
//	                          missing paths) are not read and nothing is made
//	.git/chunkvc/cache        the read cache, a local store kept in LRU order by mtime
//
// Glossary:
//   - embedded store: the repository's own store; chunks of offline
//     commits, or everything when it is the configured store.
//   - alternate: another repository's embedded store, read-only (clones
//     of a local path).
//   - remote: the configured store. There is no read cache when it is
//     local.
//   - bound: the bytes the read cache may hold; eviction takes it down
//     to nine tenths of that, least recently used first.
package readpath
