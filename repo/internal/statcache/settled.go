package statcache

import (
	"os"
	"path/filepath"
	"time"
)

// Settled returns the stat cache's view of f, whose last write left it
// with the stat written: the stat, and the time to record as hashed. A
// large file's (one that costs more to read again than a short wait) is
// taken once that write is older than the racy window of its file system
// (waiting out a short one), so that the entry is trusted, a later write
// moving the mtime; if the stat moved meanwhile the entry matches
// nothing. A small file, or one on a file system with a long window
// (network), gets a racily clean entry: the next status reads it once.
//
// Where times move after a stat (multigrain timestamps), nothing is
// waited: written came from a stat after our last write, so a later write
// changes the stat, and the entry is recorded as past the window.
func Settled(f *os.File, written Stat, large bool) (Stat, int64) {
	dir := filepath.Dir(f.Name())
	w := FSWindow(dir)
	if TimesMoveAfterStat(dir) {
		return written, max(time.Now().UnixNano(), written.Mtime+w+1)
	}
	if !large || w > int64(100*time.Millisecond) {
		return written, written.Mtime // racy: Mtime+window >= Hashed
	}
	if wait := time.Duration(written.Mtime + w + 1 - time.Now().UnixNano()); wait > 0 {
		time.Sleep(wait)
	}
	fi, err := f.Stat()
	if err != nil || StatOf(fi) != written {
		return Stat{}, 0
	}
	return written, time.Now().UnixNano()
}
