package gitdb

import (
	"bytes"
	"cmp"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// setIndex writes idx as the Git index, the way git does: into index.lock,
// created exclusively (a git command that holds it makes this fail rather
// than be overwritten), renamed over the index once whole. go-git's
// SetIndex truncates the index and writes it in place: a crash, or a git
// reading meanwhile, saw a torn index.
func (g *Repo) setIndex(idx *index.Index) error {
	lk, err := g.lockIndex()
	if err != nil {
		return err
	}
	defer lk.abort()
	return lk.commit(idx)
}

// indexLock is index.lock, held: git commands that would change the
// index meanwhile fail, as they do while git itself commits.
type indexLock struct {
	f           *os.File // nil once committed or aborted
	lock, final string
	disown      func() // removes the owner record (lockowner.go)
}

// lockIndex takes index.lock.
func (g *Repo) lockIndex() (*indexLock, error) {
	final := filepath.Join(g.gitDir, "index")
	lock := final + ".lock"
	owners := lockOwners{g.gitDir}
	f, err := owners.createLock(lock) // a killed chunkvc's is taken over (lockowner.go)
	if errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("%s exists: %w; if none is running, remove the file and try again", lock, ErrGitLocked)
	}
	if err != nil {
		return nil, err
	}
	return &indexLock{f: f, lock: lock, final: final, disown: func() { owners.disown(lock) }}, nil
}

// commit writes idx into the lock and renames it over the index.
func (lk *indexLock) commit(idx *index.Index) error {
	f := lk.f
	lk.f = nil
	err := writeIndex(f, idx)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(lk.lock, lk.final)
	}
	if err != nil {
		os.Remove(lk.lock)
	}
	lk.disown()
	if err != nil {
		return fmt.Errorf("write %s: %w", lk.final, err)
	}
	return nil
}

// abort gives the lock up, unless it was committed.
func (lk *indexLock) abort() {
	if lk.f != nil {
		lk.f.Close()
		os.Remove(lk.lock)
		lk.disown()
		lk.f = nil
	}
}

// Index entry fields (versions 2 and 3; the layout is drawn in doc.go).
const (
	indexEntryHeader = 62
	indexNameMask    = 0xfff
	indexExtended    = 0x4000
	indexIntentToAdd = 1 << 13
	indexSkipWork    = 1 << 14
)

// encodeIndex returns idx as writeIndex writes it.
func encodeIndex(idx *index.Index) ([]byte, error) {
	var buf bytes.Buffer
	err := writeIndex(&buf, idx)
	return buf.Bytes(), err
}

// indexChunk is how much of an index writeIndex holds before writing it
// out: the index is not built whole in fresh memory, a page fault per
// 4 KiB (about 14 µs each where make bench runs: 7 ms of a commit of ten
// of 20,000 manifests).
const indexChunk = 64 << 10

// writeIndex writes idx to w as go-git's encoder writes it (no
// extensions), sorting the entries in place by name and stage as git
// keeps them (go-git sorts by name only, which may move a conflict's
// stages out of order). go-git writes each field through encoding/binary's
// reflection: 27 ms for an index of 20,000 entries, most of a commit of
// ten of them. Version 4's prefix-compressed names are left to go-git. On
// an error, w holds part of an index.
func writeIndex(w io.Writer, idx *index.Index) error {
	if idx.Version != 2 && idx.Version != 3 {
		if err := index.NewEncoder(w).Encode(idx); err != nil {
			return fmt.Errorf("encode git index: %w", err)
		}
		return nil
	}
	slices.SortStableFunc(idx.Entries, func(a, b *index.Entry) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), cmp.Compare(a.Stage, b.Stage))
	})
	sum := sha1.New()
	b := make([]byte, 0, 2*indexChunk)
	flush := func() error {
		sum.Write(b)
		_, err := w.Write(b)
		b = b[:0]
		return err
	}
	b = append(b, "DIRC"...)
	b = binary.BigEndian.AppendUint32(b, idx.Version)
	b = binary.BigEndian.AppendUint32(b, uint32(len(idx.Entries)))
	for _, e := range idx.Entries {
		if len(b) >= indexChunk {
			if err := flush(); err != nil {
				return err
			}
		}
		var err error
		if b, err = appendIndexEntry(b, e); err != nil {
			return err
		}
	}
	if err := flush(); err != nil {
		return err
	}
	_, err := w.Write(sum.Sum(nil))
	return err
}

// appendIndexEntry appends e, as an index of versions 2 or 3 holds it, to
// b, which holds whole entries: an entry's padding counts from its start.
func appendIndexEntry(b []byte, e *index.Entry) ([]byte, error) {
	start := len(b)
	for _, t := range [2]*time.Time{&e.CreatedAt, &e.ModifiedAt} {
		var sec, nsec uint32
		if !t.IsZero() {
			if t.Unix() < 0 || t.UnixNano() < 0 {
				return nil, fmt.Errorf("encode git index: %s: %w", e.Name, index.ErrInvalidTimestamp)
			}
			sec, nsec = uint32(t.Unix()), uint32(t.Nanosecond())
		}
		b = binary.BigEndian.AppendUint32(b, sec)
		b = binary.BigEndian.AppendUint32(b, nsec)
	}
	for _, v := range [6]uint32{e.Dev, e.Inode, uint32(e.Mode), e.UID, e.GID, e.Size} {
		b = binary.BigEndian.AppendUint32(b, v)
	}
	b = append(b, e.Hash[:]...)
	flags := uint16(e.Stage&0x3)<<12 | uint16(min(len(e.Name), indexNameMask))
	if e.IntentToAdd || e.SkipWorktree {
		var ext uint16
		if e.IntentToAdd {
			ext |= indexIntentToAdd
		}
		if e.SkipWorktree {
			ext |= indexSkipWork
		}
		b = binary.BigEndian.AppendUint16(b, flags|indexExtended)
		b = binary.BigEndian.AppendUint16(b, ext)
	} else {
		b = binary.BigEndian.AppendUint16(b, flags)
	}
	b = append(b, e.Name...)
	return append(b, make([]byte, 8-(len(b)-start)%8)...), nil
}

// index reads the Git index as go-git's IndexStorage.Index does (an empty
// version 2 index when there is none). An index of versions 2 or 3 without
// extensions (as setIndex writes them) is decoded here, 5 times faster
// than go-git's reflection; any other, or one that is damaged, goes to
// go-git's decoder, which gives its answer or its error. The file is
// mapped, not read (readMapped); both decoders copy what they keep.
func (g *Repo) index() (*index.Index, error) {
	fsys, ok := g.r.Storer.(*filesystem.Storage)
	if !ok {
		return g.r.Storer.Index()
	}
	name := filepath.Join(fsys.Filesystem().Root(), "index")
	var idx *index.Index
	err := readMapped(name, func(data []byte, fi os.FileInfo) error {
		var ok bool
		if idx, ok = decodeIndex(data); !ok {
			idx = &index.Index{Version: 2}
			if err := index.NewDecoder(bytes.NewReader(data)).Decode(idx); err != nil {
				return err
			}
		}
		idx.ModTime = fi.ModTime()
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return &index.Index{Version: 2}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return idx, nil
}

// readAll reads the whole of f, whose stat is fi.
func readAll(f *os.File, fi os.FileInfo) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(int(max(fi.Size(), 0)) + 1) // +1: the read that finds the end
	_, err := buf.ReadFrom(f)
	return buf.Bytes(), err
}

// decodeIndex decodes an index of versions 2 or 3 that has no extensions
// and whose checksum holds, into what go-git's decoder makes of it; ok is
// false for anything else.
func decodeIndex(b []byte) (idx *index.Index, ok bool) {
	if len(b) < 12+sha1.Size || string(b[:4]) != "DIRC" {
		return nil, false
	}
	body, sum := b[:len(b)-sha1.Size], b[len(b)-sha1.Size:]
	version, count := binary.BigEndian.Uint32(b[4:]), binary.BigEndian.Uint32(b[8:])
	if version != 2 && version != 3 || uint64(count) > uint64(len(body)/indexEntryHeader) {
		return nil, false
	}
	idx = &index.Index{Version: version, Entries: make([]*index.Entry, count)}
	all := make([]index.Entry, count) // one allocation, not one per entry
	p := body[12:]
	for i := range all {
		if len(p) < indexEntryHeader {
			return nil, false
		}
		e := &all[i]
		u := func(k int) uint32 { return binary.BigEndian.Uint32(p[4*k:]) }
		if sec, nsec := u(0), u(1); sec != 0 || nsec != 0 {
			e.CreatedAt = time.Unix(int64(sec), int64(nsec))
		}
		if sec, nsec := u(2), u(3); sec != 0 || nsec != 0 {
			e.ModifiedAt = time.Unix(int64(sec), int64(nsec))
		}
		e.Dev, e.Inode, e.Mode, e.UID, e.GID, e.Size = u(4), u(5), filemode.FileMode(u(6)), u(7), u(8), u(9)
		copy(e.Hash[:], p[40:60])
		flags := binary.BigEndian.Uint16(p[60:])
		e.Stage = index.Stage(flags>>12) & 0x3
		head := indexEntryHeader
		if flags&indexExtended != 0 {
			if len(p) < head+2 {
				return nil, false
			}
			ext := binary.BigEndian.Uint16(p[head:])
			e.IntentToAdd, e.SkipWorktree = ext&indexIntentToAdd != 0, ext&indexSkipWork != 0
			head += 2
		}
		p = p[head:]
		n, used := int(flags&indexNameMask), int(flags&indexNameMask)
		if n == indexNameMask { // longer: up to its NUL
			if n = bytes.IndexByte(p, 0); n < 0 {
				return nil, false
			}
			used = n + 1
		}
		if len(p) < used {
			return nil, false
		}
		e.Name = string(p[:n])
		pad := max(8-(head+n)%8, used-n)
		if len(p) < n+pad {
			return nil, false
		}
		p = p[n+pad:]
		idx.Entries[i] = e
	}
	if len(p) != 0 || sha1.Sum(body) != [sha1.Size]byte(sum) {
		return nil, false // extensions, or damage: go-git's to judge
	}
	return idx, true
}
