//go:build !linux

package local

import (
	"io/fs"
	"time"
)

// changed is when fi's file last changed; off Linux, its modification time.
func changed(fi fs.FileInfo) time.Time { return fi.ModTime() }
