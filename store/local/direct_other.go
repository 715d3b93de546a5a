//go:build !linux

package local

import (
	"errors"
	"os"
)

var errNoDirect = errors.New("O_DIRECT is not available here")

// setDirect reports that O_DIRECT is not used off Linux: packs are written
// through the page cache there.
func setDirect(f *os.File, on bool) error {
	if on {
		return errNoDirect
	}
	return nil
}

func mapSegment(n int) ([]byte, error) { return make([]byte, n), nil }

func unmapSegment([]byte) {}

func localDiskFS(string) bool { return false }

func mapFile(*os.File, int) ([]byte, func(), error) { return nil, nil, errNoDirect }

func releaseMapped([]byte) {}
