// Package diffscan finds the tracked files that differ between two
// revisions, or between a revision and the work tree, and describes each
// with package diff (Run): the revision and work-tree side of chunkvc
// diff.
//
// Contract: Run reads Git through Git, which repo's Git implements, and
// the work tree through the functions Env gives it; it never writes a
// store or Git. A working file is read only when the stat cache cannot
// vouch for its bytes; what it learns by reading one goes back into the
// stat cache. A file added with the same bytes as a deleted one is
// reported as that file renamed. Files are reported in path order; a
// feature comparison that fails is a warning on its file, not an error.
//
// Glossary:
//   - old side: From, a revision (HEAD when empty).
//   - new side: To, a revision, or the work tree when empty.
//   - scope: the files or folders (slash paths from the root) a diff is
//     limited to; empty means every tracked file.
//   - pair: one file's old and new manifests, nil on the side it is not.
package diffscan
