// Package featurediff pairs the rows (features) of two versions of a
// vector dataset, one file or a partitioned lake, and says which were
// added, removed, modified or moved between files, with old → new column
// values and geometries. It reads nothing: the repo package decodes the
// row groups or feature blocks whose chunks changed and hands their rows
// over; so a row outside them is, by construction, unchanged.
//
// The types are the "features" object of chunkvc diff --json --features,
// a published interface (the review page reads it): fields may be added,
// never renamed.
//
// Glossary:
//   - key: the column whose value names a feature across versions (from
//     a `key = COLUMN PATTERN` config line, --key, or detected); without
//     one a row is named by the hash of its content ("content"), and a
//     modified row is then a removed one plus an added one.
//   - moved: a key that left one file and appeared in another (a row that
//     changed partition, cell=A → cell=B); counted as moved_out of the
//     old file and moved_in of the new.
//   - duplicate: a key held by two rows of one revision among the rows
//     compared, in two files or twice in one; a warning. The repo package
//     adds those it finds in the rest of a lake.
//   - rewrite: a file written again under a new name (Input.Renames); its
//     rows are compared with its pair's as if the name had not changed.
package featurediff
