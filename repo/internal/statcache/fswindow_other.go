//go:build !linux

package statcache

import "io/fs"

// ctimeIno: not portable beyond Linux here; size and mtime still count.
func ctimeIno(fs.FileInfo) (int64, uint64) { return 0, 0 }

// FSWindow is the racy window of the file system holding dir: without a
// cheap way to know the file system, that of coarse (FAT-like, 2 s)
// timestamps.
func FSWindow(string) int64 { return racyWindow }

// SingleLink reports whether fi's file has no other name: without a link
// count, never, so that no file is patched in place.
func SingleLink(fs.FileInfo) bool { return false }

// TimesMoveAfterStat reports whether a change after a stat always gives
// a file new times: not known beyond Linux.
func TimesMoveAfterStat(string) bool { return false }
