// Package gitdb reads and writes the files of a Git repository that
// chunkvc changes itself, the way git does, so that no crash can leave
// them torn.
//
// References. A ref update takes "<ref>.lock" (created exclusively: a
// second writer, chunkvc or git, fails instead of waiting), checks under
// the lock that the ref still holds the value the caller read
// (compare-and-set), writes and fsyncs the new value, appends the reflog
// entry, renames the lock over the ref and fsyncs the directory. A reader
// therefore sees the old value or the new one, never an empty file, and a
// killed writer leaves at most a stale lock, which blocks further updates
// (as it does for git) rather than losing history.
//
// Glossary:
//   - ref: a name under refs/ (or HEAD) holding a 40-hex object name,
//     loose in its own file or in packed-refs.
//   - symbolic ref: a ref holding "ref: <name>" (HEAD on a branch).
//   - reflog: logs/<ref>, one line per update:
//     "<old> <new> <name> <<email>> <unix seconds> <+hhmm>\t<message>\n".
//   - broken ref: a loose ref file that exists but does not hold a valid
//     value (empty, truncated, garbage). It is an error, never "no ref".
package gitdb
