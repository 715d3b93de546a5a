// Package fileio holds the small file primitives checkout writes with:
// CopyRange, a copy between files done by the kernel where it can, and
// SectionWriter, a WriterAt confined to one byte range of a file.
//
// Contract: CopyRange reports false, having copied nothing, when the
// kernel cannot copy between these files (or on systems without
// copy_file_range); the caller then copies by hand. A SectionWriter
// refuses, writing nothing, a write that would leave its range.
//
// Glossary:
//   - reflink: a copy that shares the source's blocks (btrfs, xfs);
//     copy_file_range makes one where the file system can.
//   - section: n bytes of a file from offset off.
package fileio
