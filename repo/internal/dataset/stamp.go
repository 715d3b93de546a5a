package dataset

import (
	"encoding/binary"
	"io/fs"
	"slices"

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

// add adds one file to the stamp st and to its digest d, in the order
// filepath.WalkDir visits files (Plan.Stamp sorts its files so); rec is a
// buffer to reuse, returned.
func (st *Stamp) add(d *hashing.Digest, rec []byte, rel string, mode fs.FileMode, s statcache.Stat) []byte {
	rec = append(rec[:0], rel...)
	rec = append(rec, 0)
	rec = binary.LittleEndian.AppendUint32(rec, uint32(mode))
	for _, v := range []int64{s.Size, s.Mtime, s.Ctime, int64(s.Ino)} {
		rec = binary.LittleEndian.AppendUint64(rec, uint64(v))
	}
	_, _ = d.Write(rec)
	st.Files++
	st.Size += s.Size
	st.Newest = max(st.Newest, s.Mtime, s.Ctime)
	return rec
}

// Stamp is the stamp of the store as Build walked it: StampOf's, from
// the same lstats, without walking the store again.
func (p *Plan) Stamp() Stamp {
	order := make([]int, len(p.Files))
	for i := range order {
		order[i] = i
	}
	// WalkDir's order: by path with '/' before every other byte.
	slices.SortFunc(order, func(a, b int) int { return walkCompare(p.Files[a].Path, p.Files[b].Path) })
	var st Stamp
	d := hashing.New()
	var rec []byte
	for _, i := range order {
		f := &p.Files[i]
		rec = st.add(d, rec, f.Path, f.Mode, f.Stat)
	}
	st.Sum = d.ID()
	return st
}

// walkCompare orders slash paths as a depth-first walk with sorted
// directory entries visits them.
func walkCompare(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		ca, cb := a[i], b[i]
		if ca == cb {
			continue
		}
		if ca == '/' {
			return -1
		}
		if cb == '/' {
			return 1
		}
		return int(ca) - int(cb)
	}
	return len(a) - len(b)
}
