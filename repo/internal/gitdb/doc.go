// Package gitdb is chunkvc's Git: it reads commits, trees and blobs,
// writes blobs, trees, commits and the index, moves refs and runs the git
// command. It is the only package of the module that imports go-git, and
// it speaks chunkvc's types (Hash, Commit, Blob), never go-git's.
//
// What it writes, it writes the way git does, so that no crash can leave
// a file torn and a git running meanwhile sees the old state or the new:
// every file is complete under a temp or lock name before it is renamed.
// Objects are written by this package's own codecs, which are faster than
// go-git's for what chunkvc writes (manifests; a commit of 20,000 files),
// and are checked against git in the tests (git fsck, verify-pack,
// ls-files). Trees are listed by its own parser too (treeread.go: loose
// trees inflated directly, packed ones read through go-git), checked
// against go-git's walker and fuzzed against its decoder.
//
// Glossary:
//   - object: a blob (a file's bytes), tree (a folder) or commit, named
//     by the SHA-1 of its header and bytes (Hash).
//   - loose object: one object in its own file; pack: many in one file,
//     found through the pack's index (.idx).
//   - index: .git/index, the staging area: one entry per path that the
//     next commit's tree holds.
//   - ref: a name under refs/ (or HEAD) holding a 40-hex object name,
//     loose in its own file or in packed-refs.
//   - symbolic ref: a ref holding "ref: <name>" (HEAD on a branch).
//   - reflog: logs/<ref>, one line per update of the ref.
//   - broken ref: a loose ref file that exists but does not hold a valid
//     value (empty, truncated, garbage). It is an error, never "no ref".
//
// # References
//
// A ref update takes "<ref>.lock" (created exclusively: a second writer,
// chunkvc or git, fails instead of waiting), checks under the lock that
// the ref still holds the value the caller read (compare-and-set), writes
// and fsyncs the new value, appends the reflog entry, renames the lock
// over the ref and fsyncs the directory. A killed writer leaves at most a
// stale lock, which blocks further updates (as it does for git) rather
// than losing history.
//
//	refs/heads/<name>   <40 hex>\n
//	HEAD                ref: refs/heads/<name>\n   or, detached, <40 hex>\n
//	packed-refs         # comment\n, then <40 hex> SP <ref>\n, each
//	                    optionally followed by ^<40 hex>\n (the peeled tag)
//	logs/<ref>          <old hex> SP <new hex> SP <name> SP <<email>> SP
//	                    <unix seconds> SP <+hhmm> TAB <message on one line>\n
//
// # Index
//
// Versions 2 and 3 are encoded and decoded here (index.go); version 4 and
// any index with extensions go to go-git's codec. All integers are
// big-endian. The index is read from a mapping of the file (on Linux) and
// written 64 KiB at a time, never held whole in fresh memory: a page
// fault per 4 KiB is most of the cost of an index of 20,000 entries.
//
//	header   "DIRC" | version (4) | entry count (4)
//	entry    ctime s | ctime ns | mtime s | mtime ns | dev | ino | mode |
//	         uid | gid | size                          (4 bytes each, 40)
//	         SHA-1 (20)
//	         flags (2): assume-valid (1 bit) | extended (1) | stage (2) |
//	                    name length (12; 0xfff: longer, up to its NUL)
//	         [version 3, extended: 2 more: intent-to-add bit 13,
//	                    skip-worktree bit 14]
//	         name | 1 to 8 NULs, to a multiple of 8 bytes from the entry's start
//	         ...
//	         [extensions: "TREE", "REUC"…, each 4-byte name | 4-byte size | data]
//	trailer  SHA-1 of everything before it (20)
//
// The index is replaced under "index.lock", taken exclusively as git
// takes it: while a git holds it, a write fails with ErrGitLocked. One a
// killed chunkvc left is taken over, as is a ref's (lockowner.go: an
// second name, in chunkvc/lock-owners/, naming host and pid, made before
// the lock is linked into place).
//
// # Loose objects
//
// objects/<first 2 hex>/<other 38 hex> holds zlib(header | bytes), where
// the header is "blob <decimal size>\x00" ("tree …", "commit …" alike)
// and the name is the SHA-1 of header and bytes (blob.go). chunkvc
// deflates at zlib's best speed, as git does for loose objects, and
// rewrites (freshens) an object that is there already, as git does.
//
// # Packs
//
// A commit of many manifests writes them as one pack and its index
// (pack.go), blobs only, no deltas. Integers are big-endian.
//
//	pack   "PACK" | version 2 (4) | object count (4)
//	       per object: header | zlib stream of its bytes
//	         header byte 0: more (1 bit) | type (3; 3 = blob) | size bits 0-3
//	         while more is set, another byte: more (1) | next 7 size bits
//	       SHA-1 of everything before it (20)
//	idx    "\xfftOc" | version 2 (4)
//	       fan-out: 256 × 4 bytes, entry i = how many ids start with a byte <= i
//	       ids, sorted (20 each)
//	       CRC-32 of each object's bytes in the pack (4 each, id order)
//	       offset of each object in the pack (4 each; below 2 GiB, so the
//	       64-bit offset table is never needed)
//	       SHA-1 of the pack (20) | SHA-1 of the idx before it (20)
//
// # Trees and commits
//
// commitwrite.go makes a commit of the index: one tree per folder,
// bottom-up, then the commit, each stored as a loose object (go-git's
// object encoder), then the branch moves as under References.
//
//	tree    per entry, sorted by name (a folder sorts as its name and "/"):
//	        <octal mode, no leading 0> SP <name> NUL <20-byte id>
//	commit  tree <hex>\n
//	        parent <hex>\n                  (none for a root commit; one per parent)
//	        author <name> <<email>> <unix seconds> <+hhmm>\n
//	        committer <name> <<email>> <unix seconds> <+hhmm>\n
//	        \n
//	        <message>
package gitdb
