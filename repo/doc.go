// Package repo is a chunkvc data repository: an ordinary Git repository
// whose big files are kept out of Git and described by manifests.
//
//	<root>/.chunkvc/config                 tracked patterns and store URL (committed)
//	<root>/.chunkvc/manifests/<path>       one manifest per tracked file (committed)
//	<root>/.git/chunkvc/store/             the embedded local store (default)
//	<root>/.git/chunkvc/statcache          stat cache (binary, checksummed): unchanged files are not re-read
//	<root>/.git/chunkvc/listing            the manifest files of one Git tree, keyed by its hash (checksummed)
//	<root>/.git/chunkvc/lock               held while a command writes
//	<root>/.git/chunkvc/blocks/<digest>    block cache: per-MiB chaining values of a version
//	<root>/.git/chunkvc/patch              undo journal of a checkout patching a file in place
//
// It owns the pipelines (commit, checkout, status, log, push and pull)
// and hands gc, fsck and the revision side of diff their repository as a
// narrow Env or interface. It reads and writes Git through
// repo/internal/gitdb, the only package that imports the Git library.
// Self-contained mechanisms sit beside gitdb under repo/internal, none of
// which imports repo: gc (mark and sweep), fsck (the data check),
// diffscan (which files two versions differ in), reach (the objects
// commits reference), registry (the repositories sharing a store, for
// gc), trust (whether the configured store may be
// used), chunkread (ranged reads of a stored file), readpath (where chunk
// bytes come from: embedded store, alternates, read cache, configured
// store), statcache (the stat cache), blockcache (the block cache),
// journal (the undo journal of a patch in place), derived (the check of
// derived segments at commit), boxsel (the chunks a --bbox needs),
// pattern (tracked globs and the .gitignore block), walk (listing and
// stating the work tree, several folders at once), fileio (kernel copy
// and section writes), lockfile (the repository lock) and confine (the
// work tree and .git, written and read without ever following a link).
//
// Commit order is the product's promise: hash → set-diff against the
// previous commit's manifest → put only new chunks → verify → only then
// write the Git index and commit. A failure before the Git commit leaves
// HEAD and the index as they were. A file is read once per commit
// (hashing.Scan): its chunks, inline bytes and digest come from the same
// bytes.
//
// Checkout writes a new file and renames it over the old one once its
// digest is verified, or, when the target differs from the working file in
// a few pieces at the same offsets, patches the working file under an undo
// journal (repo/internal/journal) that the next command taking the
// lock replays if the checkout did not finish.
package repo
