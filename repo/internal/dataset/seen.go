package dataset

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/repo/internal/binrec"
	"github.com/chunkvc/chunkvc/repo/internal/statcache"
)

// Seen remembers the chunk IDs read from a store's files, by file, byte
// range and the file's lstat, so that a commit of a store where five of
// 100,000 files changed reads five: a range of a file whose lstat is the
// one recorded is taken to hold the bytes it held then, as Git's index
// trusts stat. Like the stat cache, an entry is trusted only when the
// file's newest time is more than Window before the reading began (an
// edit in the same clock tick would not move it).
//
// The file (.git/chunkvc/seen/<dataset hash>) is a cache: damaged,
// truncated or of another version, it is ignored and rebuilt, never an
// error. Its format: "chunkvc-seen 1\n", the time reading began (uvarint
// ns), the entry count, then per entry, in path order: the length of the
// prefix shared with the previous path and the rest (uvarints and bytes),
// offset, length, size, mtime, ctime, inode (uvarints), the 32-byte ID;
// then a BLAKE3 checksum of all that comes before.
type Seen struct {
	Hashed int64 // when the reading that made the entries began (ns)
	// Window is how far before Hashed a file's times must lie for its
	// entry to be trusted (statcache.FSWindow of the store's file
	// system; RacyWindow when zero). Not stored: the reader sets it.
	Window  int64
	entries []seenEntry
}

type seenEntry struct {
	path     string
	off, len int64
	stat     statcache.Stat
	id       hashing.ID
}

// RacyWindow is how long before the reading began a file's times must lie
// for its entry to be trusted: coarse file-system clocks tick in seconds.
const RacyWindow = int64(2e9)

const seenMagic = "chunkvc-seen 1\n"

// maxSeenEntries bounds what a decoded file may claim before anything is
// allocated for it.
const maxSeenEntries = 1 << 26

// Lookup returns the ID recorded for bytes [off, off+n) of path when the
// file's lstat is still st and the entry is not racy.
func (s *Seen) Lookup(path string, off, n int64, st statcache.Stat) (hashing.ID, bool) {
	if s == nil {
		return hashing.ID{}, false
	}
	i, ok := slices.BinarySearchFunc(s.entries, seenEntry{path: path, off: off}, cmpSeen)
	if !ok {
		return hashing.ID{}, false
	}
	e := &s.entries[i]
	w := s.Window
	if w <= 0 {
		w = RacyWindow
	}
	if e.len != n || e.stat != st || max(st.Mtime, st.Ctime)+w >= s.Hashed {
		return hashing.ID{}, false
	}
	return e.id, true
}

// Recorded reports whether an entry for bytes [off, off+n) of path with
// lstat st exists, trusted or not: one that Lookup refused as racy, which
// a new reading, later, would make trusted.
func (s *Seen) Recorded(path string, off, n int64, st statcache.Stat) bool {
	if s == nil {
		return false
	}
	i, ok := slices.BinarySearchFunc(s.entries, seenEntry{path: path, off: off}, cmpSeen)
	return ok && s.entries[i].len == n && s.entries[i].stat == st
}

// Add records id for bytes [off, off+n) of path, whose lstat was st.
// Entries may come in any order; Encode sorts them.
func (s *Seen) Add(path string, off, n int64, st statcache.Stat, id hashing.ID) {
	s.entries = append(s.entries, seenEntry{path: path, off: off, len: n, stat: st, id: id})
}

func cmpSeen(a, b seenEntry) int {
	if c := strings.Compare(a.path, b.path); c != 0 {
		return c
	}
	return int(min(max(a.off-b.off, -1), 1))
}

// Encode returns the file's bytes.
func (s *Seen) Encode() []byte {
	slices.SortFunc(s.entries, cmpSeen)
	s.entries = slices.CompactFunc(s.entries, func(a, b seenEntry) bool { return cmpSeen(a, b) == 0 })
	b := []byte(seenMagic)
	b = binary.AppendUvarint(b, uint64(s.Hashed))
	b = binary.AppendUvarint(b, uint64(len(s.entries)))
	prev := ""
	for _, e := range s.entries {
		b = binrec.AppendShared(b, prev, e.path)
		for _, v := range []int64{e.off, e.len, e.stat.Size, e.stat.Mtime, e.stat.Ctime, int64(e.stat.Ino)} {
			b = binary.AppendUvarint(b, uint64(v))
		}
		b = append(b, e.id[:]...)
		prev = e.path
	}
	sum := hashing.Sum(b)
	return append(b, sum[:]...)
}

var errSeen = errors.New("seen cache damaged")

// DecodeSeen reads a file Encode wrote; anything else is an error.
func DecodeSeen(data []byte) (*Seen, error) {
	if len(data) < len(seenMagic)+32 || !bytes.HasPrefix(data, []byte(seenMagic)) {
		return nil, errSeen
	}
	body, sum := data[:len(data)-32], data[len(data)-32:]
	if want := hashing.Sum(body); !bytes.Equal(want[:], sum) {
		return nil, errSeen
	}
	d := binrec.Reader{B: body[len(seenMagic):]}
	s := &Seen{Hashed: int64(d.Uvarint())}
	n := d.Uvarint()
	// Each entry takes at least 40 bytes: no count beyond that is believed.
	if n > maxSeenEntries || n > uint64(len(d.B))/40 {
		return nil, errSeen
	}
	s.entries = make([]seenEntry, 0, n)
	prev := ""
	for range n {
		shared, rest := d.Uvarint(), d.Uvarint()
		if d.Bad || shared > uint64(len(prev)) || rest > uint64(len(d.B)) {
			return nil, errSeen
		}
		e := seenEntry{path: prev[:shared] + string(d.B[:rest])}
		d.B = d.B[rest:]
		v := [6]int64{}
		for i := range v {
			v[i] = int64(d.Uvarint())
		}
		e.off, e.len = v[0], v[1]
		e.stat = statcache.Stat{Size: v[2], Mtime: v[3], Ctime: v[4], Ino: uint64(v[5])}
		if d.Bad || len(d.B) < 32 || (len(s.entries) > 0 && cmpSeen(s.entries[len(s.entries)-1], e) >= 0) {
			return nil, errSeen
		}
		copy(e.id[:], d.B)
		d.B = d.B[32:]
		s.entries = append(s.entries, e)
		prev = e.path
	}
	if d.Bad || len(d.B) != 0 {
		return nil, errSeen
	}
	return s, nil
}

// LoadSeen reads the cache file at name; a missing or damaged one is an
// empty cache.
func LoadSeen(name string) *Seen {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil
	}
	s, err := DecodeSeen(data)
	if err != nil {
		return nil
	}
	return s
}

// SaveSeen writes s to name, through a temporary file renamed over it
// (a reader sees the old cache or the new, never half of one). Not
// synced: a cache lost in a crash is rebuilt by reading the store.
func SaveSeen(name string, s *Seen) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o777); err != nil {
		return err
	}
	tmp := name + tmpMark + fmt.Sprint(os.Getpid())
	if err := os.WriteFile(tmp, s.Encode(), 0o666); err != nil {
		return err
	}
	if err := os.Rename(tmp, name); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}
