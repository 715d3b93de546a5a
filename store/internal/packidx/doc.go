// Package packidx encodes and decodes the index files of the packs of
// store/local and store/internal/packstore (the cloud stores', raw and zstd
// objects only). All integers
// are little-endian.
//
// A pack file is an 8-byte header followed by stored objects, back to back:
//
//	"CVCP" version(u32 = 1) | object bytes ...
//
// Its index file lists the objects in the pack, sorted by ID:
//
//	"CVCX" version(u32 = 1) count(u32) packSize(u64)   20-byte header
//	count × 90-byte entries:
//	    id        [32]byte  BLAKE3 of the object's raw bytes
//	    offset    u64       where the stored bytes start in the pack
//	    stored    u64       length of the stored bytes
//	    size      u64       length of the raw (decoded) object
//	    encoding  u8        0 raw, 1 zstd frame, 2 zstd delta (see below)
//	    depth     u8        0, or the length of the delta chain down to a full object
//	    base      [32]byte  the delta's base object; zero unless encoding is 2
//	checksum  [32]byte  BLAKE3 of every byte before it
//
// A delta (encoding 2) cuts the raw object into segments of DeltaSegment
// bytes; segment i is one zstd frame with dictionary ID i+1, whose raw
// dictionary is the base's bytes from i·DeltaSegment−DeltaMargin to
// (i+1)·DeltaSegment+DeltaMargin, clipped to the base (a segment whose
// dictionary would be empty has none, and dictionary ID 0). There is exactly one
// valid encoding of an index: Decode(b) succeeds only if Encode gives b back.
package packidx
