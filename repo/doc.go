// Package repo is a chunkvc data repository: an ordinary Git repository
// whose big files are kept out of Git and described by manifests.
//
//	<root>/.chunkvc/config                 tracked patterns and store URL (committed)
//	<root>/.chunkvc/manifests/<path>       one manifest per tracked file (committed)
//	<root>/.git/chunkvc/store/             the embedded local store (default)
//	<root>/.git/chunkvc/statcache          stat cache (binary, checksummed): unchanged files are not re-read
//	<root>/.git/chunkvc/lock               held while a command writes
//
// It owns the pipelines (commit, checkout, status, fsck, log) and is the only
// package that imports go-git.
//
// Commit order is the product's promise: hash → set-diff against the
// previous commit's manifest → put only new chunks → verify → only then
// write the Git index and commit. A failure before the Git commit leaves
// HEAD and the index as they were.
package repo
