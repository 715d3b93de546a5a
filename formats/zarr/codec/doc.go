// Package codec decodes Zarr chunks in pure Go: the stored bytes of one
// chunk back to the array's raw element bytes, and those to float64
// values. chunkvc needs it only for small arrays, coordinate arrays
// above all, to give chunks a footprint; it never rewrites chunks.
//
// Contract:
//   - NewV2 and NewV3 build an immutable Pipeline from an array's
//     metadata fields; Pipeline.Decode turns one stored chunk into a Raw
//     of exactly DecodedSize bytes, and Raw.Float64 gives its values in C
//     order.
//   - What this package cannot decode (a codec, a filter, a data type,
//     a Blosc2 chunk) fails with an *UnsupportedError naming it, which
//     matches ErrUnsupported: a caller leaves the footprint out and says
//     why. Bytes that contradict themselves fail with ErrCorrupt.
//   - No input panics, and no buffer grows past what the metadata or a
//     checked header declares, never past MaxDecoded (256 MiB).
//
// Supported: v2 compressors blosc, zlib, gzip, bz2, zstd, lz4 (numcodecs'
// framing: a 4-byte little-endian size, then an LZ4 block) and none;
// v2 filters delta (dtype equal to astype) and shuffle; v3 codecs
// transpose, bytes, gzip, zstd, blosc, crc32c (verified) and
// numcodecs.{zlib,gzip,bz2,zstd,lz4,blosc}. Blosc chunks are read by our
// own reader of the Blosc 1 format with every internal codec: blosclz
// (our decoder), lz4 and lz4hc, snappy, zlib, zstd; no, byte and bit
// shuffle. sharding_indexed, pcodec, zfpy and the like are unsupported.
//
// Glossary:
//   - stored bytes: a chunk as its file or object holds it.
//   - raw bytes: the chunk's elements as the array's memory holds them,
//     in the dtype's byte order and, for v2, the array's order ('C' or
//     'F'); v3 chunks come out in C order, transposes undone.
//   - dtype: the element type (DType): kind, width, byte order.
//   - Blosc block: the unit Blosc compresses, blocksize bytes (the last
//     one may be shorter); a split block is one stream per byte plane.
//   - memcpyed: a Blosc chunk stored uncompressed after its header.
//   - shuffle: Blosc's transposes that group byte planes (byte shuffle)
//     or bit planes (bit shuffle) of the elements before compression.
package codec
