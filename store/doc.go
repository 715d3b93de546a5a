// Package store defines chunkvc's content-addressed object store: objects are
// immutable byte strings named by the BLAKE3 ID of their own bytes.
//
// A Store is composed of one-method interfaces (Getter, Putter, Stater,
// Lister, Remover). How an object is kept at rest (raw, compressed, packed)
// is the store's business; callers always see the original bytes.
//
// A store may also have optional capabilities, each a named interface:
// Batcher, BulkRemover, Sweeper, Registry, Confirmer, BatchStater, Toucher,
// Repacker and Connectioner. The helpers VerifyMany, HasMany, Touch and
// Connections use a capability when the store has it and fall back when it
// does not; store/storetest checks each one a store has.
//
// Verification happens at the boundary: Put (the package function) checks
// that data hashes to its ID before any backend sees it, and ReadAll checks
// the bytes it returns. Backends may therefore trust their input.
//
// Layout of the local store (store/local; the byte layout of its packs is in
// store/internal/packidx):
//
//	<root>/<first two hex digits>/<64 hex digits>   one file per object, read-only
//	<root>/<first two hex digits>/.put-*           temp files before rename (beside
//	                                                their object: creating them in one
//	                                                shared folder serialised puts on its lock)
//	<root>/tmp/pack-*.tmp                           a batch's pack while it is written
//	<root>/packs/pack-<hex>.pack                    objects put through a Batch, each raw,
//	                                                zstd-compressed or a zstd delta
//	<root>/packs/pack-<hex>.idx                     the pack's index, written last: sorted
//	                                                (id, offset, stored, size, encoding,
//	                                                depth, base) entries, BLAKE3 checksum
//	<root>/named/repos/<id>.json                    the registry of repositories using the
//	                                                store (store.Registry)
//	<root>/named/expired/<date>-<hex>.json          one record per gc --expire
//
// Layout of the S3 store (store/s3), under s3://bucket/prefix:
//
//	<prefix>/<first two hex digits>/<64 hex digits>   one object per chunk put alone
//	<prefix>/packs/pack-<hex>.pack                    a batch's objects, raw, same
//	                                                  layout as local packs (≤ 64 MiB)
//	<prefix>/packs/pack-<hex>.idx                     its index, stored after the pack
//	<prefix>/named/repos/<id>.json                    the registry of repositories
//	<prefix>/named/expired/<date>-<hex>.json          one record per gc --expire
//
// Debris — temp files, packs whose index was never written, uploads never
// completed — is what an interrupted write leaves; no reader sees it, and
// Sweeper removes it once it is older than a cutoff.
package store
