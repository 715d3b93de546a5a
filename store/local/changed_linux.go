package local

import (
	"io/fs"
	"syscall"
	"time"
)

// changed is when fi's file last changed: the later of its modification
// time and its status change time. A rename sets the latter, so a pack
// renamed into place with an old modification time (a rewrite keeps its
// objects' age) still looks new while its index is being written.
func changed(fi fs.FileInfo) time.Time {
	t := fi.ModTime()
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		if c := time.Unix(st.Ctim.Sec, st.Ctim.Nsec); c.After(t) {
			return c
		}
	}
	return t
}
