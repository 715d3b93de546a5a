// Package zarr reads the structure of a Zarr store (v2 and v3) so that
// chunkvc can track it as one dataset: which files are metadata, which are
// chunks of which array at which grid coordinates, which are v3 shards and
// where their inner chunks lie. It reads no chunk data (decoding is
// formats/zarr/codec's) and decides nothing about manifests.
//
// Contract:
//
//   - Metadata parsers (ParseZArray, ParseZGroup, ParseZAttrs,
//     ParseZMetadata, ParseZarrJSON) are strict about what shapes the grid
//     and the keys, and tolerant of fields they do not know. Every error
//     wraps ErrMetadata and names the file. No input makes them panic or
//     allocate more than its size; grids are bounded (MaxRank, MaxDim,
//     MaxGridChunks) so no product overflows.
//   - Chunk files: Array.ParseChunkFile and Array.ChunkFile are inverses on
//     every valid chunk path of the array (format(parse(p)) == p); a path
//     that is not exactly one (another encoding, wrong rank, a leading
//     zero, out of the grid) is refused with ErrKey.
//   - Chunk keys: Array.ChunkKey spells chunkvc's key for a chunk,
//     "<array>/c/<i>/<j>/…" whatever the store's own encoding, valid for
//     formats.CheckKey. An inner chunk of a shard is keyed by its global
//     coordinates in the inner-chunk grid (KeyGrid), so re-sharding keeps
//     its key. An array path a key cannot hold, or one long enough to push
//     the key past formats.MaxKeyLen, is replaced by "~" and 16 hex digits
//     of its BLAKE3 hash (KeyPrefix): stable, not an error. Sharder groups
//     keys by a block of about 256 chunks of the grid.
//   - Walk (Scan, ScanDir) lists every file of a store exactly once, in a
//     deterministic order, with its Role; nothing is left out, and nothing
//     outside the store (symbolic links are never followed) is read. A
//     store it cannot read as Zarr (GDAL 3.6's pre-release v3 layout,
//     broken root metadata) comes back with Store.Unsupported set and
//     every file RoleOther, to be kept as plain files.
//   - Shards: Sharding.ReadIndex/DecodeIndex check the index (crc32c when
//     present; every stored inner chunk inside the file, off the index, no
//     overlaps) and Sharding.EncodeIndex is its inverse, so a consumer can
//     check that an index is derivable from its inner chunks' places by
//     comparing bytes. Errors wrap ErrShard and name the file.
//
// Layouts this package reads:
//
//	v2  t2m/.zarray  t2m/.zattrs  t2m/0.3.1        dimension_separator "."
//	    t2m/0/3/1                                  dimension_separator "/"
//	v3  t2m/zarr.json  t2m/c/0/3/1                 chunk_key_encoding default "/"
//	    t2m/c.0.3.1                                default "."
//	    t2m/0.3.1                                  v2 "."
//	shard (v3 sharding_indexed):
//	    |inner|inner| gap |inner|index (16 bytes × entries [+ crc32c])|   index_location end
//	    |index|inner|inner|...                                            index_location start
//
// Glossary:
//
//   - store: a directory tree whose root holds .zgroup, .zarray or
//     zarr.json; its paths are slash-separated and relative to the root.
//   - node: a group or an array, a directory holding its metadata.
//   - group: a node that holds other nodes and attributes, no data.
//   - array: an n-dimensional grid of values cut into chunks of a fixed
//     chunk shape.
//   - grid coordinates: a chunk's position in the chunk grid, one integer
//     per dimension (chunk (i, j) holds rows i·chunk[0]… of the array).
//   - chunk key: the store path of a chunk file (the store's key encoding),
//     or chunkvc's key of a chunk in a manifest (ChunkKey); the text says
//     which.
//   - key encoding: how an array spells its chunk keys: v2 separators "."
//     and "/", v3 "default" (a "c" prefix) and "v2".
//   - shard: a v3 chunk file that packs several inner chunks and an index
//     of their byte ranges (the sharding_indexed codec).
//   - inner chunk: one chunk inside a shard; its inner coordinates are its
//     position within the shard, its global coordinates its position in the
//     array's grid of inner chunks.
package zarr
