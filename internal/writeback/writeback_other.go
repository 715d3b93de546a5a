//go:build !linux

package writeback

import "os"

// Start does nothing where there is no way to start writeback without
// waiting for it (Linux's sync_file_range): the later fsync does it all.
func Start(*os.File) error { return nil }

// StartRange does nothing, like Start.
func StartRange(*os.File, int64, int64) error { return nil }
