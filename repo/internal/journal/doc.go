// Package journal is the undo journal of a checkout that patches a
// working file in place (.git/chunkvc/patch): its encoding, and the undo
// that puts the old bytes back after a crash.
//
// Contract: Encode has exactly one output per Journal and Decode accepts
// only that output, so Decode(Encode(j)) equals j and a decoded journal
// encodes back to the bytes it came from. Decode checks the trailing
// BLAKE3 before it trusts anything past the path; on damage it returns
// an error wrapping ErrDamaged and, when it could be read, the path.
// Undo changes the file only if it is still the inode the journal names.
//
// Layout (integers are unsigned varints, encoding/binary.AppendUvarint):
//
//	"chunkvc-patch 1\n"        Magic
//	path      uvarint length, bytes   slash path in the work tree
//	ino       uvarint                 inode of the file patched
//	old size  uvarint                 size before the patch
//	new size  uvarint                 size the patch gives it
//	digest    [32]byte                of the version the file was
//	layout    [32]byte                of the version the file was
//	spans     uvarint count; per span: offset uvarint, length uvarint, old bytes
//	sum       [32]byte                BLAKE3 of everything above
//
// Glossary:
//   - patch: a checkout that writes only the pieces of a file that differ
//     from the version it holds, at the same offsets.
//   - span: bytes at an offset as they were before the patch: each piece
//     to be written, and the tail a shorter version cuts off.
//   - undo: writing the spans back, cutting the file to its old size and
//     checking it against the old digest.
//   - replaced: the path now names another inode; not ours to change.
package journal
