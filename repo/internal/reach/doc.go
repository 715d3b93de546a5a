// Package reach finds the stored objects that commits reference: the
// chunks and layouts their manifests name. Push uploads that set, gc
// keeps it.
//
// Contract: Referenced reads each manifest blob once however many commits
// hold it, and records for every id the first commit, path and key that
// names it (for messages). It reads Git only through Manifests, which
// repo's Git implements (split manifests read with their shards); it
// never reads a store.
//
// Glossary:
//   - manifest blob: the Git blob of a file's manifest (or of a split
//     manifest's root) in a commit's .chunkvc/manifests tree.
//   - use: where an id was met first; a layout's key is "(layout)".
package reach
