// Package chunkread gives random access to a stored file version without
// materialising it: serve's ranged reads, cat and checkout --bbox read
// through it.
//
// Contract: every byte a File returns was verified, chunks against their
// id by the Source, derived pieces by the Source's assembly against the
// file's digest. A chunk or layout whose length is not what the manifest
// and layout say is an error wrapping ErrIntegrity; no byte of a range is
// returned when any chunk of it failed. Reader and File are safe for
// concurrent use; a ReadSeeker is not.
//
// Glossary:
//   - manifest: the description of a file version (its size, digest,
//     layout id and chunks); package manifest.
//   - layout: the blob listing a file's pieces in file order.
//   - piece: inline bytes held in the layout, a chunk by id, or a derived
//     piece (a FlatGeobuf index) regenerated from the rest of the file.
//   - Source: where bytes come from; repo's read path, nearest store
//     first. "Remote" reads came from the configured store.
//   - memory budget: the bytes of recently used chunks a Reader keeps
//     (an LRU), and, apart, of regenerated derived pieces.
//   - window: a byte range a ReadSeeker will read; read-ahead stays in it.
package chunkread
