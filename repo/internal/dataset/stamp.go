package dataset

import (
	"encoding/binary"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/repo/internal/statcache"
)

// Stamp is what stat says of a store's files, summed: a store whose stamp
// equals the one taken when a version was committed holds that version,
// as Git's index trusts stat for a file. Like the stat cache's entries, a
// stamp is trusted only when taken more than the racy window after its
// Newest time (an edit within the same tick would not move it).
type Stamp struct {
	Files  int
	Size   int64
	Sum    hashing.ID // BLAKE3 over each file's path and stat, in path order
	Newest int64      // the latest mtime or ctime of any file (ns)
}

// StampOf stats every file under dir (never following a link: a link is
// stamped as itself, for commit to refuse). Temporary files of an Update
// are left out.
func StampOf(dir string) (Stamp, error) {
	var st Stamp
	d := hashing.New()
	var rec []byte
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || strings.Contains(e.Name(), tmpMark) {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		s := statcache.StatOf(fi)
		rec = append(rec[:0], filepath.ToSlash(rel)...)
		rec = append(rec, 0)
		rec = binary.LittleEndian.AppendUint32(rec, uint32(fi.Mode()))
		for _, v := range []int64{s.Size, s.Mtime, s.Ctime, int64(s.Ino)} {
			rec = binary.LittleEndian.AppendUint64(rec, uint64(v))
		}
		_, _ = d.Write(rec)
		st.Files++
		st.Size += s.Size
		st.Newest = max(st.Newest, s.Mtime, s.Ctime)
		return nil
	})
	if err != nil {
		return Stamp{}, fmt.Errorf("zarr store %s: %w", dir, err)
	}
	st.Sum = d.ID()
	return st, nil
}
