package statcache

import (
	"io/fs"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ctimeIno returns the inode-change time (ns) and inode number, of an
// os or a StatNames answer.
func ctimeIno(fi fs.FileInfo) (int64, uint64) {
	switch st := fi.Sys().(type) {
	case *syscall.Stat_t:
		return st.Ctim.Sec*1e9 + st.Ctim.Nsec, st.Ino
	case *info:
		return st.ctime, st.ino
	}
	return 0, 0
}

// FSWindow is how far apart two writes must be for their mtimes to
// differ on the file system holding dir. Linux file systems with
// nanosecond timestamps take them from the coarse clock (one tick, at
// most 10 ms), so a file hashed 50 ms after its last write is settled;
// anything else (FAT, network file systems) gets the safe 2 s.
func FSWindow(dir string) int64 {
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

// TimesMoveAfterStat reports whether, on the file system holding dir, a
// change made after a stat of a file always gives it new times, however
// soon: multigrain timestamps, which Linux uses on ext4, xfs, btrfs and
// tmpfs from 6.13 on (a stat marks the inode's times as seen, and the next
// change takes a fine-grained time past them). Then an entry whose stat
// was taken after our last write needs no racy window waited out.
func TimesMoveAfterStat(dir string) bool {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return false
	}
	switch uint32(st.Type) {
	case 0xEF53, 0x58465342, 0x9123683E, 0x01021994: // ext4, xfs, btrfs, tmpfs
	default:
		return false
	}
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		return false
	}
	var rel []byte
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		rel = append(rel, byte(c))
	}
	return releaseAtLeast(string(rel), 6, 13)
}

// releaseAtLeast reports whether a kernel release string ("6.18.4-arch1")
// is major.minor or later.
func releaseAtLeast(release string, major, minor int) bool {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return false
	}
	digits := parts[1] // "13-rc1": the leading digits
	if i := strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		digits = digits[:i]
	}
	mj, err1 := strconv.Atoi(parts[0])
	mn, err2 := strconv.Atoi(digits)
	if err1 != nil || err2 != nil {
		return false
	}
	return mj > major || mj == major && mn >= minor
}

// SingleLink reports whether fi's file has no other name, so that writing
// it in place changes nothing else.
func SingleLink(fi fs.FileInfo) bool {
	switch st := fi.Sys().(type) {
	case *syscall.Stat_t:
		return st.Nlink == 1
	case *info:
		return st.nlink == 1
	}
	return false
}
