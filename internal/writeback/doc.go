// Package writeback starts a file's writeback early, so that the fsync
// that makes it durable later has little left to wait for: store/local's
// packs while a commit is still hashing, a checked-out file while its
// digest is verified. Linux only (sync_file_range); elsewhere Start does
// nothing. SyncDir makes a folder's entries durable (after a rename or a
// removal), for the store and the repository alike.
package writeback
