package repo

import (
	"io/fs"
	"syscall"
	"time"
)

// ctimeIno returns the inode-change time (ns) and inode number.
func ctimeIno(fi fs.FileInfo) (int64, uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ctim.Sec*1e9 + st.Ctim.Nsec, st.Ino
	}
	return 0, 0
}

// fsWindow is how far apart two writes must be for their mtimes to
// differ on the file system holding dir. Linux file systems with
// nanosecond timestamps take them from the coarse clock (one tick, at
// most 10 ms), so a file hashed 50 ms after its last write is settled;
// anything else (FAT, network file systems) gets the safe 2 s.
func fsWindow(dir string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return racyWindow
	}
	switch uint32(st.Type) {
	case 0xEF53, // ext2/3/4
		0x58465342, // xfs
		0x9123683E, // btrfs
		0x01021994, // tmpfs
		0x794C7630, // overlayfs
		0x2FC12FC1, // zfs
		0xF2F52010: // f2fs
		return int64(50 * time.Millisecond)
	}
	return racyWindow
}

// singleLink reports whether fi's file has no other name, so that writing
// it in place changes nothing else.
func singleLink(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Nlink == 1
}
