// Package diff says what changed between two versions of a tracked file,
// from their manifests alone: chunk counts, the changed area and what the
// change means for each format. It reads no file, no store and no Git; the
// repo package finds the manifests (two revisions, or a revision and the
// work tree) and hands them over.
//
// The result types are chunkvc's diff --json output: their JSON is a
// published interface, kept stable.
//
// Glossary:
//   - version: one manifest of a file; old and new (cur) name the two
//     sides, either of which may be missing (added, deleted).
//   - Status: what happened to a file (added, deleted, modified, renamed).
//   - Change: what happened to one chunk key (added, removed, changed);
//     unchanged keys are counted, not listed.
//   - changed area: the union of the footprints of the changed chunks at
//     the finest TIFF level that changed, so overview tiles do not widen
//     it; for FlatGeobuf, once features are compared, of the added and
//     removed features.
//   - extent: the whole file's footprint, from its summary "bbox" field.
//   - re-encode: a change of encoding settings that rewrote (nearly)
//     every chunk; flagged rather than listed chunk by chunk.
//   - Zarr array (ZarrDiff): one array of a Zarr dataset's manifest, known
//     by its key prefix from the "array" summary fields (formats/zarr
//     ParseSummaryArray); its chunks are the keys under that prefix, placed
//     in its grid by formats/zarr ParseKey. Drift is a change of dtype,
//     chunk shape, order, codecs or fill value: a re-chunk or re-encode.
//   - value statistics (ZarrChunkStats, diff --stats): a changed chunk of
//     an array decoded in both versions (repo reads them, formats/zarr/codec
//     decodes) and compared element by element by CompareZarr; elements
//     "changed" differ (two NaNs do not), "numeric" ones differ by a finite
//     new − old, the only ones min, max and mean describe.
package diff
