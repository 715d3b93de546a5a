//go:build !linux

package fileio

import "os"

// CopyRange is not done by the kernel here: the caller copies by hand.
func CopyRange(dst *os.File, dstOff int64, src *os.File, srcOff, n int64) (bool, error) {
	return false, nil
}
