//go:build !linux

package gitdb

import "os"

// readMapped calls use with the bytes of the file name, read (mapping is
// left to Linux), and its stat.
func readMapped(name string, use func(data []byte, fi os.FileInfo) error) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	data, err := readAll(f, fi)
	if err != nil {
		return err
	}
	return use(data, fi)
}
