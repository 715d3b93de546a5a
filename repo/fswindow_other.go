//go:build !linux

package repo

import "io/fs"

// ctimeIno: not portable beyond Linux here; size and mtime still count.
func ctimeIno(fs.FileInfo) (int64, uint64) { return 0, 0 }

// fsWindow: without a cheap way to know the file system, assume coarse
// (FAT-like, 2 s) timestamps.
func fsWindow(string) int64 { return racyWindow }

// singleLink: without a link count, never patch a file in place.
func singleLink(fs.FileInfo) bool { return false }

// timesMoveAfterStat: not known beyond Linux.
func timesMoveAfterStat(string) bool { return false }
