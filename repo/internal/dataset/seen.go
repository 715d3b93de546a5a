package dataset

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/repo/internal/binrec"
	"github.com/chunkvc/chunkvc/repo/internal/statcache"
)

// The seen cache remembers the chunk IDs read from a store's files, by
// file, byte range and the file's lstat, so that a commit of a store where
// five of 100,000 files changed reads five: a range of a file whose lstat
// is the one recorded is taken to hold the bytes it held then, as Git's
// index trusts stat. Like the stat cache, an entry is trusted only when
// the file's newest time is more than a window (statcache.FSWindow of the
// store's file system, RacyWindow when unknown) before the reading that
// recorded it began: an edit in the same clock tick would not move it.
//
// It is read and written as a stream (MatchSeen, WriteSeen), never held:
// a million chunks' entries took 97 MB decoded, and the file 59 MB more
// while it was. MatchSeen merge-joins the file's sorted entries with the
// chunks of the plan in the same order.
//
// The file (.git/chunkvc/seen/<dataset hash>) is a cache: damaged,
// truncated or of another version, it is ignored and rebuilt, never an
// error. Its format: "chunkvc-seen 1\n", the time reading began (uvarint
// ns), the entry count, then per entry, in (path, offset) order: the
// length of the prefix shared with the previous path and the rest
// (uvarints and bytes), offset, length, size, mtime, ctime, inode
// (uvarints), the 32-byte ID; then a BLAKE3 checksum of all that comes
// before.

// SeenKey is one chunk of a reading: bytes [Off, Off+Len) of the store's
// file Path, whose lstat was Stat.
type SeenKey struct {
	Path     string
	Off, Len int64
	Stat     statcache.Stat
}

// SeenMark is what the seen cache says of one chunk.
type SeenMark uint8

const (
	// SeenNone: no entry for the chunk's range with its file's lstat.
	SeenNone SeenMark = iota
	// SeenTrusted: an entry old enough to trust; its ID is the chunk's.
	SeenTrusted
	// SeenRacy: an entry with the same lstat, too recent to trust then; a
	// new reading, later, would make it trusted.
	SeenRacy
)

// RacyWindow is how long before the reading began a file's times must lie
// for its entry to be trusted: coarse file-system clocks tick in seconds.
const RacyWindow = int64(2e9)

const seenMagic = "chunkvc-seen 1\n"

// maxSeenEntries bounds what a decoded file may claim before anything is
// allocated for it.
const maxSeenEntries = 1 << 26

// seenMinEntry is the fewest bytes an entry takes: no count beyond what
// the file's size allows is believed.
const seenMinEntry = 40

var errSeen = errors.New("seen cache damaged")

// mark is what an entry recorded (by a reading that began at hashed) says
// of chunk k, which is at the entry's path and offset.
func mark(len int64, st statcache.Stat, k SeenKey, hashed, window int64) SeenMark {
	if window <= 0 {
		window = RacyWindow
	}
	switch {
	case len != k.Len || st != k.Stat:
		return SeenNone
	case max(st.Mtime, st.Ctime)+window >= hashed:
		return SeenRacy
	}
	return SeenTrusted
}

// MatchSeen reads the seen cache at name in one pass, holding a read
// buffer, not the file, and reports what it says of n chunks: at(k) gives
// the k-th in (path, offset) order with its index i into ids and the
// marks returned. A trusted entry's ID is given to trust with i. window
// is the store's file-system window. A missing or damaged cache is ok
// false (nothing to trust; trust may have been called).
func MatchSeen(name string, window int64, n int, at func(k int) (int, SeenKey), trust func(i int, id hashing.ID)) (marks []SeenMark, ok bool) {
	sum := hashing.New()
	sf, f, ok := binrec.OpenSummed(name, sum)
	if !ok {
		return nil, false
	}
	defer f.Close()
	marks = make([]SeenMark, n)
	k, i, key := 0, 0, SeenKey{}
	if n > 0 {
		i, key = at(0)
	}
	_, err := readSeen(sf, sum, func(hashed int64, e *seenRecord) error {
		// Chunks before the entry have none; a chunk at it is marked.
		for k < n && cmpRecord(e, key.Path, key.Off) > 0 {
			if k++; k < n {
				i, key = at(k)
			}
		}
		if k < n && cmpRecord(e, key.Path, key.Off) == 0 {
			if marks[i] = mark(e.len, e.stat, key, hashed, window); marks[i] == SeenTrusted {
				trust(i, e.id)
			}
		}
		return nil
	})
	if err != nil {
		return nil, false
	}
	return marks, true
}

// seenRecord is one entry as readSeen decodes it; path is its buffer,
// valid until the next entry.
type seenRecord struct {
	path     []byte
	off, len int64
	stat     statcache.Stat
	id       hashing.ID
}

// cmpRecord orders entry e against the chunk at path and off.
func cmpRecord(e *seenRecord, path string, off int64) int {
	if c := comparePath(e.path, path); c != 0 {
		return c
	}
	return cmp.Compare(e.off, off)
}

// comparePath is strings.Compare(string(b), s) without making a string
// of b a million times.
func comparePath(b []byte, s string) int {
	for i := range min(len(b), len(s)) {
		if b[i] != s[i] {
			return cmp.Compare(b[i], s[i])
		}
	}
	return cmp.Compare(len(b), len(s))
}

// readSeen decodes a cache (sum the hash its body is written to as it is
// read), calling each for every entry in order, and
// returns the time its reading began. Any damage is errSeen, found at the
// latest when the whole file has been read: each may have been called
// with entries of a damaged file.
func readSeen(sf *binrec.Summed, sum *hashing.Digest, each func(hashed int64, e *seenRecord) error) (int64, error) {
	rd := sf.R
	var magic [len(seenMagic)]byte
	if _, err := io.ReadFull(rd, magic[:]); err != nil || string(magic[:]) != seenMagic {
		return 0, errSeen
	}
	hashed, err1 := binary.ReadUvarint(rd)
	n, err2 := binary.ReadUvarint(rd)
	if err1 != nil || err2 != nil || n > maxSeenEntries || n > uint64(sf.Size)/seenMinEntry {
		return 0, errSeen
	}
	var e, prev seenRecord
	for j := range n {
		if err := readRecord(rd, &e); err != nil {
			return 0, err
		}
		if c := bytes.Compare(prev.path, e.path); j > 0 && (c > 0 || c == 0 && prev.off >= e.off) {
			return 0, errSeen // out of order or repeated
		}
		if err := each(int64(hashed), &e); err != nil {
			return 0, err
		}
		prev.path, prev.off = append(prev.path[:0], e.path...), e.off
	}
	if id := sum.ID(); !sf.Whole(id[:]) {
		return 0, errSeen
	}
	return int64(hashed), nil
}

// readRecord reads the entry after e (whose path the new one is
// front-coded against) into e.
func readRecord(rd *bufio.Reader, e *seenRecord) error {
	shared, err1 := binary.ReadUvarint(rd)
	rest, err2 := binary.ReadUvarint(rd)
	if err1 != nil || err2 != nil || shared > uint64(len(e.path)) || rest > 1<<16 {
		return errSeen
	}
	e.path = slices.Grow(e.path[:shared], int(rest))[:int(shared+rest)]
	if _, err := io.ReadFull(rd, e.path[shared:]); err != nil {
		return errSeen
	}
	var v [6]uint64
	for i := range v {
		var err error
		if v[i], err = binary.ReadUvarint(rd); err != nil {
			return errSeen
		}
	}
	e.off, e.len = int64(v[0]), int64(v[1])
	e.stat = statcache.Stat{Size: int64(v[2]), Mtime: int64(v[3]), Ctime: int64(v[4]), Ino: v[5]}
	if _, err := io.ReadFull(rd, e.id[:]); err != nil {
		return errSeen
	}
	return nil
}

// WriteSeen writes the seen cache of a reading that began at hashed to
// name, streaming: at(k) gives the k-th of n chunks in (path, offset)
// order with its ID; a chunk at the same path and offset as the one
// before is left out. Through a temporary file renamed over name (a
// reader sees the old cache or the new, never half of one). Not synced:
// a cache lost in a crash is rebuilt by reading the store.
func WriteSeen(name string, hashed int64, n int, at func(k int) (SeenKey, hashing.ID)) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o777); err != nil {
		return err
	}
	tmp := name + tmpMark + fmt.Sprint(os.Getpid())
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	err = encodeSeen(f, hashed, n, at)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, name)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

// encodeSeen writes the cache text to w, in blocks of about 64 KiB.
func encodeSeen(w io.Writer, hashed int64, n int, at func(k int) (SeenKey, hashing.ID)) error {
	count := 0
	var prev SeenKey
	for k := range n {
		key, _ := at(k)
		if k == 0 || key.Path != prev.Path || key.Off != prev.Off {
			count++
		}
		prev = key
	}
	prev = SeenKey{}
	sum := hashing.New()
	b := []byte(seenMagic)
	b = binary.AppendUvarint(b, uint64(hashed))
	b = binary.AppendUvarint(b, uint64(count))
	for k := range n {
		key, id := at(k)
		if k > 0 && key.Path == prev.Path && key.Off == prev.Off {
			continue
		}
		b = binrec.AppendShared(b, prev.Path, key.Path)
		for _, v := range []int64{key.Off, key.Len, key.Stat.Size, key.Stat.Mtime, key.Stat.Ctime, int64(key.Stat.Ino)} {
			b = binary.AppendUvarint(b, uint64(v))
		}
		b = append(b, id[:]...)
		prev = key
		if len(b) >= 64<<10 {
			if _, err := w.Write(b); err != nil {
				return err
			}
			_, _ = sum.Write(b)
			b = b[:0]
		}
	}
	_, _ = sum.Write(b)
	id := sum.ID()
	_, err := w.Write(append(b, id[:]...))
	return err
}
