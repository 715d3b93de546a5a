package fileio

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// CopyRange copies n bytes from src at srcOff to dst at dstOff inside the
// kernel (copy_file_range: a reflink on btrfs/xfs, no user-space copy on
// ext4). It reports false, having copied nothing, when the kernel cannot do
// it for these files; the caller then copies by hand.
func CopyRange(dst *os.File, dstOff int64, src *os.File, srcOff, n int64) (bool, error) {
	first := true
	for n > 0 {
		c, err := unix.CopyFileRange(int(src.Fd()), &srcOff, int(dst.Fd()), &dstOff, int(min(n, 1<<30)), 0)
		if err != nil {
			if first && (errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EXDEV) || errors.Is(err, unix.EINVAL) ||
				errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EPERM)) {
				return false, nil
			}
			return true, err
		}
		if c == 0 {
			return true, errors.New("copy_file_range: source ended early")
		}
		first = false
		n -= int64(c)
	}
	return true, nil
}
