// Package statcache is the stat cache: what each work-tree file's bytes
// were (digest, layout, manifest) when it had a given stat, so that
// status and commit can tell an unchanged file without reading it, as
// Git's index does. It also holds the file-system facts the cache rests
// on: stats, the racy window, whether times move after a stat, and link
// counts.
//
// Contract: Lookup trusts an entry only when the file's stat (size,
// mtime, ctime, inode) is the one recorded and the entry is not racy:
// the mtime was more than the racy window older than the moment hashing
// began, so a write after the hash would have moved the stat. A racy
// entry is not an error; the file is read again. The cache is a cache: a
// missing, damaged or unwritable file costs time, never correctness, and
// Save does not fsync. Whoever can write .git can make the cache say
// anything, as they can make git's index say anything.
//
// Glossary:
//   - stat: size, mtime, ctime (ns) and inode of a file (Stat); Git's
//     set. Beyond Linux, ctime and inode are zero.
//   - entry: a path's record (Entry): its stat, the BLAKE3 digest of
//     its bytes, their layout blob when known, when hashing began
//     (hashed), the Git blob of the manifest that describes them, and
//     lazy.
//   - racy window: how far apart two writes must be for their mtimes to
//     differ (FSWindow): 50 ms on Linux file systems with fine timestamps,
//     2 s elsewhere. An entry is racy while mtime + window >= hashed.
//   - lazy: a tracked file deliberately not materialised (clone --lazy,
//     checkout --bbox outside the box); its absence is not a deletion.
//   - listing: the files a Git tree holds under some folders (HEAD's
//     manifests), saved beside the cache for one tree, keyed by its
//     hash (LoadListing, SaveListing; listing.go gives the format).
//   - multigrain timestamps: Linux 6.13+ on ext4, xfs, btrfs and tmpfs
//     give a change after a stat a new time (TimesMoveAfterStat), so an
//     entry whose stat followed chunkvc's own last write need not wait
//     out the window.
//
// # File format
//
// .git/chunkvc/statcache. varint is encoding/binary's signed (zig-zag)
// varint, uvarint its unsigned one.
//
//	magic     "chunkvc-statcache 1\n"                     20 bytes
//	count     uvarint                                     number of entries
//	entries   count times, in increasing byte order of path:
//	  path      uvarint length, then the slash path's bytes
//	  size      varint
//	  mtime     varint                                    ns since 1970
//	  ctime     varint                                    ns since 1970, 0 if unknown
//	  ino       uvarint                                   0 if unknown
//	  digest    32 bytes                                  BLAKE3 of the file's bytes
//	  flags     1 byte: 1 layout, 2 manifest, 4 lazy      other bits ignored
//	  layout    32 bytes, if flags has 1                  layout blob ID
//	  hashed    varint                                    ns since 1970
//	  manifest  if flags has 2: uvarint length, then      40 hex digits of the
//	            the bytes                                 manifest's Git blob
//	checksum  32 bytes                                    BLAKE3 of everything above
//
// A file that is shorter, fails its checksum, has a field that does not
// parse, or has bytes left after the last entry is not a cache (Load
// starts empty). LoadIndexed checks the file as whole, then decodes an
// entry only when its path is asked for (status, which looks up every
// tracked file once and seldom saves).
//
// Earlier versions wrote .git/chunkvc/statcache.json,
// {"entries":{"<path>":{"size":…,"mtime":…,"ctime":…,"ino":…,
// "digest":"<hex>","layout":"<hex>","hashed":…,"manifest":"<hex>",
// "lazy":true}}} (layout, manifest and lazy omitted when empty). Load
// reads it when there is no binary file; Save removes it.
package statcache
