package local

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/internal/packidx"
	"github.com/chunkvc/chunkvc/store/internal/packset"
)

// PackDir is the folder under the root that holds packs and their indexes.
const PackDir = "packs"

// maxIndexFile bounds the index files read into memory (about 12 million
// entries).
const maxIndexFile = 1 << 30

// packSet is what a Store knows of the packs folder.
type packSet struct {
	// change serialises changes to the set (reloads, published and
	// removed packs), so that a reload never drops a pack another
	// goroutine has just added.
	change sync.Mutex

	mu      sync.RWMutex
	loaded  bool
	dirMod  time.Time // modification time of the folder when last read
	racy    bool      // dirMod was too recent to trust
	set     packset.Set
	orphans []string // packs (by name) without an index when last read
}

// racyWindow: a folder read less than this after its last change may have
// changed again without its modification time moving (coarse timestamps).
// Filesystems with whole-second timestamps get two seconds.
const racyWindow = 100 * time.Millisecond

func (s *Store) packPath(name, ext string) string {
	return filepath.Join(s.root, PackDir, name+ext)
}

// packed returns where id is packed, as far as the Store knows without
// looking at the disk.
func (s *Store) packed(id hashing.ID) (packset.Ref, bool) {
	s.ps.mu.RLock()
	defer s.ps.mu.RUnlock()
	return s.ps.set.Lookup(id)
}

// findPacked is packed, but on a miss it first catches up with packs
// written by other processes: one stat of the packs folder unless that
// folder changed.
func (s *Store) findPacked(id hashing.ID) (packset.Ref, bool, error) {
	if r, ok := s.packed(id); ok {
		return r, true, nil
	}
	if _, err := s.refresh(false); err != nil {
		return packset.Ref{}, false, err
	}
	// Look again even if this goroutine did not read the folder: another
	// may have loaded it while this one waited (refresh then says
	// "unchanged" though the set grew since the first look).
	r, ok := s.packed(id)
	return r, ok, nil
}

// refresh brings the set up to date with the packs folder if it changed
// since it was last read, or always with force. It reports whether it read
// the folder.
func (s *Store) refresh(force bool) (bool, error) {
	dir := filepath.Join(s.root, PackDir)
	fi, err := os.Stat(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("read packs: %w", err)
	}
	var mod time.Time
	if err == nil {
		mod = fi.ModTime()
	}
	if !force && s.current(mod) {
		return false, nil
	}
	s.ps.change.Lock()
	defer s.ps.change.Unlock()
	if !force && s.current(mod) { // another goroutine caught up meanwhile
		return false, nil
	}
	return true, s.reload(dir)
}

// current reports whether the set reflects a folder last modified at mod.
func (s *Store) current(mod time.Time) bool {
	s.ps.mu.RLock()
	defer s.ps.mu.RUnlock()
	return s.ps.loaded && !s.ps.racy && mod.Equal(s.ps.dirMod)
}

// reload reads the packs folder: it parses indexes it does not know yet
// and forgets packs whose index is gone. The caller holds s.ps.change.
func (s *Store) reload(dir string) error {
	start := time.Now()
	var mod time.Time
	fi, err := os.Stat(dir)
	switch {
	case err == nil:
		mod = fi.ModTime()
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("read packs: %w", err)
	}
	var names, packs []string
	if err == nil {
		ents, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("read packs: %w", err)
		}
		for _, e := range ents {
			if name, ok := strings.CutSuffix(e.Name(), ".idx"); ok && isPackName(name) && e.Type().IsRegular() {
				names = append(names, name)
			}
			if name, ok := strings.CutSuffix(e.Name(), ".pack"); ok && isPackName(name) {
				packs = append(packs, name)
			}
		}
	}

	slices.Sort(names)
	var orphans []string
	for _, name := range packs {
		if _, ok := slices.BinarySearch(names, name); !ok {
			orphans = append(orphans, name)
		}
	}
	slices.Sort(orphans)
	// Only holders of s.ps.change modify the maps: reading them needs no
	// lock here.
	var added []*packset.Pack
	damaged := make(map[string]error)
	for _, name := range names {
		if s.ps.set.Pack(name) != nil {
			continue
		}
		// A damaged index is read again on every reload: the error may
		// have been passing, or the file replaced.
		p, err := s.readIndex(name)
		switch {
		case err == nil:
			added = append(added, p)
		case !errors.Is(err, fs.ErrNotExist):
			damaged[name] = err
		}
	}

	s.ps.mu.Lock()
	defer s.ps.mu.Unlock()
	s.ps.set.Update(func(name string) bool {
		_, ok := slices.BinarySearch(names, name)
		return ok
	}, added, damaged)
	s.ps.orphans = orphans
	s.ps.loaded = true
	s.ps.dirMod = mod
	window := racyWindow
	if mod.Nanosecond() == 0 {
		window = 2 * time.Second
	}
	s.ps.racy = !mod.IsZero() && start.Sub(mod) < window
	return nil
}

// isPackName reports whether name is pack-<64 lower-case hex digits>.
func isPackName(name string) bool {
	h, ok := strings.CutPrefix(name, "pack-")
	if !ok || len(h) != 64 {
		return false
	}
	_, err := hashing.ParseID(h)
	return err == nil
}

// readIndex reads and checks the index of pack name.
func (s *Store) readIndex(name string) (*packset.Pack, error) {
	t, err := openIndexFile(s.packPath(name, ".idx"))
	if err != nil {
		return nil, err
	}
	return &packset.Pack{Name: name, Table: t}, nil
}

// openIndexFile checks the index file at p and returns it as a table;
// errors of the check name the file and wrap packidx.ErrFormat. On a
// local disk the file is mapped, and stays mapped while the table is in
// use, rather than
// decoded into the heap: every command that stores reads every index, and
// decoding them cost a store of a million objects 120 ms and 96 MB of heap
// per command. Only the check reads every page, and lets them go as it
// passes them: a command's lookups touch only the pages they search.
//
// The file is published read-only and never written again, and removed
// only by unlink, which leaves a mapping valid on a local disk. One cut
// short under us all the same faults: during the check that reads as
// damaged; afterwards, as for any mapped file, it is fatal.
func openIndexFile(p string) (t packidx.Table, err error) {
	f, size, err := openBounded(p, maxIndexFile)
	if err != nil {
		return t, err
	}
	defer f.Close()
	// Mapped only on a local disk: on a network file system a file that
	// another host deletes can fault when its pages are read again.
	var b []byte
	var unmap func()
	if size > 0 && localDiskFS(filepath.Dir(p)) {
		b, unmap, _ = mapFile(f, int(size))
	}
	if unmap == nil {
		if b, err = readAll(f, p, size); err != nil {
			return t, err
		}
		return openIndex(p, b, packidx.OpenOptions{})
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			fault, ok := r.(interface{ Addr() uintptr })
			if !ok || !within(fault.Addr(), b) {
				panic(r)
			}
			unmap()
			t, err = packidx.Table{}, fmt.Errorf("pack index %s: %w: the file shrank while it was read", p, packidx.ErrFormat)
		}
	}()
	opt := packidx.OpenOptions{Release: unmap, Checked: func(n int) { releaseMapped(b[:n]) }}
	if t, err = openIndex(p, b, opt); err != nil {
		unmap()
		return t, err
	}
	return t, nil
}

// within reports whether addr is in b.
func within(addr uintptr, b []byte) bool {
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return addr >= start && addr-start < uintptr(len(b))
}

func openIndex(p string, b []byte, opt packidx.OpenOptions) (packidx.Table, error) {
	t, err := packidx.Open(b, opt)
	if err != nil {
		return t, fmt.Errorf("pack index %s: %w", p, err)
	}
	return t, nil
}

// publishPack adds a pack this Store has just written.
func (s *Store) publishPack(p *packset.Pack) {
	s.ps.change.Lock()
	defer s.ps.change.Unlock()
	s.ps.mu.Lock()
	defer s.ps.mu.Unlock()
	s.ps.set.Add(p)
}

// unpublishPacks forgets packs this Store has just removed.
func (s *Store) unpublishPacks(ps []*packset.Pack) {
	s.ps.change.Lock()
	defer s.ps.change.Unlock()
	s.ps.mu.Lock()
	defer s.ps.mu.Unlock()
	for _, p := range ps {
		s.ps.set.Remove(p)
	}
}

// damagedIndexes returns an error naming every index that cannot be used,
// or nil.
func (s *Store) damagedIndexes() error {
	s.ps.mu.RLock()
	defer s.ps.mu.RUnlock()
	return s.ps.set.Damaged()
}

// unreadablePacks returns an error wrapping store.ErrCorrupt that names
// every pack whose objects cannot be read, as of the last read of the
// packs folder: its index is damaged, or gone while the pack is there. It
// returns nil when there is none.
//
// A pack without an index is also what a crash between a batch's two
// renames leaves, and for a moment what a batch being committed shows: its
// objects were never committed, and a read that misses one fails anyway.
func (s *Store) unreadablePacks() error {
	s.ps.mu.RLock()
	defer s.ps.mu.RUnlock()
	errs := []error{s.ps.set.Damaged()}
	for _, name := range s.ps.orphans {
		errs = append(errs, fmt.Errorf("pack %s has no index", s.packPath(name, ".pack")))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", store.ErrCorrupt, err)
	}
	return nil
}

// packList returns the known packs, sorted by name, and the number of
// entries they hold.
func (s *Store) packList() ([]*packset.Pack, int) {
	s.ps.mu.RLock()
	defer s.ps.mu.RUnlock()
	return s.ps.set.Packs()
}

// dependants returns the packs holding deltas against id.
func (s *Store) dependants(id hashing.ID) []*packset.Pack {
	s.ps.mu.RLock()
	defer s.ps.mu.RUnlock()
	return s.ps.set.Dependants(id)
}

// snapshot returns the known packs, sorted by name, each with a mask of
// the entries that are the mapped copy of their object.
func (s *Store) snapshot() ([]*packset.Pack, [][]bool) {
	s.ps.mu.RLock()
	defer s.ps.mu.RUnlock()
	return s.ps.set.Snapshot()
}
