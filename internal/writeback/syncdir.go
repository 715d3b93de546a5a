package writeback

import "os"

// SyncDir fsyncs the folder dir, so that a file created, renamed or
// removed in it stays so after a crash.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
