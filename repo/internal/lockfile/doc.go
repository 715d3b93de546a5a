// Package lockfile is the repository lock, .git/chunkvc/lock: one
// writing chunkvc command at a time.
//
// Contract: the lock file appears whole (its holder is written to a
// temp file that is then linked into place; where links are refused it
// is created exclusively and written). A lock whose holder is a dead
// process of this host, or that is empty and older than 10 s, is taken
// over; any other is waited for, then refused with an error wrapping
// ErrLocked that names the holder. Release removes the file.
//
//	.git/chunkvc/lock    "<pid> <host> <RFC 3339 UTC time>\n"
//
// Glossary:
//   - holder: the process whose pid and host the lock file names.
//   - stale: a lock whose holder is gone (same host only: another host's
//     process cannot be checked) or which was left empty.
package lockfile
