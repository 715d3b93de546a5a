// Package blockcache is the block cache: it lets a commit of a file edited
// in a few tiles hash only the 1 MiB blocks around them for the file's
// digest, and only the changed tiles for their IDs, instead of the whole
// file a second time.
//
// For each file version (by digest) it keeps, in
// .git/chunkvc/blocks/<digest>, the chaining value of every block and a
// fingerprint of the layout pieces that cover it. When the next
// version's pieces over a block have the same fingerprint (offsets,
// lengths and IDs), the block's bytes are the same, and so is its
// chaining value (Set.Reuse).
//
// It also keeps the quick table: the Quick, length and BLAKE3 ID of the
// version's chunk pieces of 1 KiB or more. A commit takes a piece's ID
// from there when the Quick of its bytes is in the table (Set.Known),
// instead of hashing it with BLAKE3. A record states a fact about bytes,
// not about a place in a file, so a rewritten file whose tiles moved
// finds them too, and a version made by patching another keeps its table
// (Set.KeepQuick).
//
// Contract:
//   - A record rests on bytes that changed not keeping their Quick. By
//     accident that is 2^-128. On purpose it is XXH3's strength against
//     someone who writes the file without knowing the seed: no attack on
//     its path for inputs over 240 bytes is known, but one on shorter
//     ones is (xxHash issue #1127, about 2^-27 a try), so pieces under
//     1 KiB are never recorded and always hashed. The seed is random per
//     table (NewQuickSeed). Whoever can write .git can make the cache say
//     anything, as they can make a commit record anything.
//   - It is a cache: written without fsync, and an entry that is missing,
//     damaged, for another size, or whose chaining values do not give its
//     digest is not used (Load returns nil; everything is then hashed).
//   - Callers vouch for what they store: a commit takes prints, chaining
//     values and quick records from one read of the file, and a checkout
//     keeps an entry only when reading the file back gives the manifest's
//     digest. As a last guard against a value carried on wrongly, an
//     entry of generation MaxGeneration-1 or more is not used, so every
//     MaxGeneration-th commit of a file hashes every byte.
//   - Load, Save and Prune close the directories of the tree they are
//     given when they return; the tree stays usable.
//
// Glossary:
//   - block: hashing.BlockLen (1 MiB) bytes of a file, the last one
//     shorter; the unit of BLAKE3's tree above which the digest is made.
//   - chaining value (CV): BLAKE3's 32-byte value of one block, from
//     which the digest is computed (hashing.BlockRoot).
//   - piece: a segment of the file (Piece): a chunk, inline bytes (in
//     parts of hashing.MaxRange) or a derived piece, with its BLAKE3.
//   - fingerprint (print): 16 bytes of the BLAKE3 of the offset, length
//     and ID of every piece overlapping a block (BlockPrint); zero when
//     the pieces leave a gap, and a zero print is never reused.
//   - Quick: hashing.Quick, XXH3-128 of a piece's bytes under the table's
//     seed.
//   - quick table: the records (Quick, length, ID) of an entry, sorted by
//     Quick, each Quick once; a Quick seen with two lengths or IDs is
//     left out (Set.SetQuick).
//   - generation: how many commits in a row carried chaining values on
//     since all were computed from the bytes.
//
// # File format
//
// .git/chunkvc/blocks/<digest>, <digest> the 64 hex digits of the
// version's BLAKE3. All integers are little-endian.
//
//	magic         "chunkvc-blocks 2\n"                    17 bytes
//	file size     uint64                                  must be the file's
//	block count   uint32                                  ceil(size / 1 MiB)
//	generation    uint32
//	per block     fingerprint [16]byte, chaining value [32]byte
//	quick seed    uint64
//	record count  uint32
//	per record    Quick [16]byte, length uint32, ID [32]byte
//	              in strictly increasing byte order of Quick;
//	              1024 <= length <= hashing.MaxRange
//	checksum      [32]byte                                BLAKE3 of everything above
//
// An entry is refused (decode) when it is shorter than its header and
// checksum, the checksum or magic differ, the size is not the file's,
// the block count is not the size's or the bytes do not hold it, the
// records do not fill the rest exactly, or a record breaks the order or
// the length bounds.
package blockcache
