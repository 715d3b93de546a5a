// Package local is the content-addressed store on a local file system.
//
// Objects put one at a time (Put) are loose: one read-only file each at
// <root>/<2 hex>/<64 hex>, written through a temp file beside it, synced
// and renamed into place. Objects put through a Batch go into pack files,
// which cost a few files and fsyncs per batch instead of a temp file, an
// fsync, a rename and a folder fsync per object; a packed object is stored raw, zstd-compressed, or
// as a zstd delta against a similar object (the Batch's like hint).
//
//	<root>/tmp/pack-*.tmp                a batch's pack while it is written
//	<root>/packs/pack-<hex>.pack         a published pack, read-only
//	<root>/packs/pack-<hex>.idx          its index; <hex> is the index's checksum
//	<root>/packs/.put-*                  an index before its rename
//	<root>/named/<name>                  named objects (store.Registry), e.g.
//	                                     named/repos/<id>.json
//
// Byte layout (little-endian; details in store/internal/packidx):
//
//	pack   "CVCP" version:u32 | stored objects back to back
//	index  "CVCX" version:u32 count:u32 packSize:u64
//	       | count × (id[32] offset:u64 stored:u64 size:u64 encoding:u8 depth:u8 base[32]), sorted by id
//	       | BLAKE3 of all the above [32]
//
// A batch gathers its pack in 4 MiB segments and writes each whole from a
// page-aligned buffer, with O_DIRECT on Linux where the file system takes
// it (the last, partial block of the pack through the page cache).
//
// Encodings are 0 raw, 1 one zstd frame, 2 zstd delta: frames of 2 MiB
// segments whose dictionaries are the like object's bytes around the same
// offset. Delta chains are at most 10 deep. A batch
// publishes each pack — syncs it, renames it into packs/, then writes its
// index (temp file, sync, rename, sync of packs/) — as soon as it is full
// (512 MiB), and the last one on Commit: a pack's objects are visible
// exactly when its index exists, and a batch killed midway leaves its full
// packs for a retry to find. A crash leaves a temp pack in tmp/, a
// temp index, or a pack without an index; Sweep removes such debris once it
// is older than the caller's cutoff (gc's grace period). A damaged index makes its pack's objects
// unavailable and List (hence gc) and DeleteMany fail naming it; other packs
// are not affected. While an index is damaged, or a pack has none, an object
// the store cannot find may be in that pack: the error wraps
// store.ErrCorrupt, naming the pack, as well as store.ErrNotFound.
//
// A Store keeps the indexes as their files' bytes, not decoded (mapped on
// a local disk; read into memory elsewhere, as on NFS a file another host
// deletes can fault when its pages are read again): each is checked whole
// (checksum and rules) when first read, then entries are decoded as
// lookups reach them, so a command's memory does not grow with the number
// of objects stored. When an object is not
// found there it re-reads the packs folder if that changed since (one stat
// on a miss), so that packs published by other processes are seen; when a
// pack file has vanished (rewritten by another process's DeleteMany) it
// reloads and retries once.
package local
