// Package flatgeobuf is the FlatGeobuf (v3) adapter: feature records are
// grouped into content-defined blocks, each a chunk with the bbox of its
// features; the packed Hilbert R-tree is chunked by content.
//
//	0    "fgb" 3 "fgb" patch       magic                          inline
//	8    u32 LE header_len
//	12   Header flatbuffer         name, envelope, geometry type,  inline
//	                               columns, features_count, CRS,
//	                               index_node_size (absent = 16)
//	     packed R-tree             40-byte nodes, root first,      "index@" CDC
//	                               present iff node size > 0 and
//	                               features_count > 0
//	     u32 len | Feature fb      repeated to EOF                  blocks
//	     u32 len | Feature fb      ┐ block "f/<hash of 1st feature>"
//	     …                         ┘ (cut after a feature whose hash
//	                                  says so, see BlockMin/Avg/Max)
//
// Feature flatbuffers hold only buffer-relative offsets, so a record keeps
// its bytes (and ID) wherever it moves. The index depends only on the
// records in file order and the node size: BuildIndex regenerates it, and
// the summary says whether the stored index equals the rebuild
// ("derived-ok") or not ("verbatim"). Layout walks the records once and
// keeps none of them: blocks are cut, and the stored index compared node
// by node with the tree over the records, as they go (the tree holds one
// open parent per level). DeriveTo writes the index the same way, so
// neither grows with the feature count; Derive and Features hold it all.
//
// Merge (PlanMerge, MergePlan.WriteTo) merges three versions' feature
// sets by key (a column's value, else the record's hash) and writes the
// result as GDAL writes an indexed file: one side's header with
// features_count and envelope patched in place (fixed-width fields, so
// no offset moves), the records sorted by the Hilbert index of their bbox
// centres over the extent, highest first (HilbertSort: GDAL's curve and
// grid), and the tree over them. The plan holds, per feature of each
// side, its key, hash, bbox and record extent (not its bytes), and per
// merged feature its Feature and side; the records are copied through a
// window of each side. Check reads the written file back: the planned
// records in order, and a stored index equal to the rebuild.
//
// The flatbuffer reader is hand-written and bounds-checks every read;
// anything malformed — header past EOF, features_count disagreeing with the
// records, a record past EOF — is an error and the file falls back to the
// generic chunker.
package flatgeobuf
