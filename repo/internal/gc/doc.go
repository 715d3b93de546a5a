// Package gc is garbage collection of chunk stores: mark the objects that
// commits reference (Live, Others), then sweep every other object older
// than the grace period out of each store (Run).
//
// Contract: nothing is deleted unless the whole live set is known. Others
// fails, deleting nothing, when it cannot account for some registered
// repository's chunks (registry.ErrUnknownRepos). Run deletes from a
// store only objects that are not live and were modified before the
// cutoff (now minus the grace period), as a second listing right before
// the deletes still shows them (a commit elsewhere may have touched one
// since the first: store.Touch), sweeps the debris of interrupted
// writes (store.Sweeper) and merges small packs (store.Repacker); with
// DryRun it counts what it would delete and writes nothing. The package
// reads Git through Git, which repo's Git implements, and opens another
// repository's Git through the Opener repo gives it; it never imports
// repo, and the lock, the registry entry and the block cache stay there.
//
// Glossary:
//   - live: an object some commit reachable from a ref, a reflog entry
//     within the grace period, or another registered repository
//     references, or a working file's layout.
//   - young: not live but modified after the cutoff, or with no known
//     time; kept.
//   - debris: what interrupted writes left (temp files, packs without an
//     index, uploads never completed).
//   - target: a store gc collects, named "remote" (the configured
//     store), "local" (the embedded store) or "cache" (the read cache).
package gc
