// Package packstore is the pack layer of the cloud stores that have none of
// their own (store/azure, store/gcs): objects put through a Batch are
// appended to temp pack files and uploaded as one pack object plus its
// index (the layout of store/internal/packidx, raw and zstd objects only),
// batch existence checks cost no request for packed objects, DeleteMany
// rewrites packs, and Sweep removes packs left without an index.
//
// It talks to the service only through Backend, a handful of primitive
// object operations (upload, whole and ranged reads, list by prefix, stat,
// delete) that each store implements with its own SDK, so that only
// store/azure imports azblob and only store/gcs the Google SDK. Loose
// objects (one per chunk, under the store's fan-out keys) stay the store's
// own: Packs reaches them through Loose.
//
// Keys under the store's prefix:
//
//	packs/pack-<hex>.pack   objects back to back, raw or zstd
//	packs/pack-<hex>.idx    its index, stored after the pack; <hex> is the
//	                        index's checksum
//
// A pack's objects are readable exactly when its index exists; a batch
// killed midway leaves its finished packs as ordinary objects and at most
// the packs in flight without an index, which Sweep removes once they are
// older than its cutoff. Readers keep every index in memory, loaded on
// first use; an object found neither there nor loose makes them list
// packs/ again before reporting it missing. A damaged index hides its
// pack's objects and makes List and DeleteMany fail naming it.
//
// Ages are the pack objects' (and loose objects') modification times. With
// Config.Touch, TouchObject refreshes one, and a batch refreshes those of
// the packs and loose objects it reuses, once each, so that a gc in
// another process spares them while the commit is in flight; a reload
// takes the listing's ages of the packs it knew, so a touch made
// elsewhere is seen.
package packstore
