package local

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/chunkvc/chunkvc/internal/writeback"
	"github.com/chunkvc/chunkvc/store/internal/packidx"
	"github.com/chunkvc/chunkvc/store/internal/packset"
)

// discard closes and removes temp packs, passing over published ones.
func discard(packs []*tmpPack) error {
	var errs []error
	for _, tp := range packs {
		if tp.published {
			continue
		}
		if tp.st != nil {
			tp.st.release()
		}
		tp.f.Close()
		if err := os.Remove(tp.f.Name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// add appends an entry's stored bytes to a pack that no batch writes
// concurrently (a rewrite or a repack), at the end: e's offset is ignored.
func (tp *tmpPack) add(e packidx.Entry, stored []byte) error {
	e.Offset = tp.size
	if _, err := tp.f.WriteAt(stored, e.Offset); err != nil {
		return err
	}
	if err := tp.entries.Append(e); err != nil {
		return err
	}
	tp.size += e.Stored
	return nil
}

// newTmpPack creates a temp pack file in tmp/ and writes its header; staged
// packs are written through a stager (a batch's), the others with add.
func (s *Store) newTmpPack(staged bool) (*tmpPack, error) {
	dir := filepath.Join(s.root, TmpDir)
	f, err := os.CreateTemp(dir, "pack-*.tmp")
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(dir, 0o755); err == nil {
			f, err = os.CreateTemp(dir, "pack-*.tmp")
		}
	}
	if err != nil {
		return nil, err
	}
	tp := &tmpPack{f: f, size: packidx.PackHeaderSize}
	if staged {
		tp.st = newStager(f, s.useDirect(), &s.refused)
		err = tp.st.append([]byte(packidx.PackHeader))
	} else {
		_, err = f.WriteAt([]byte(packidx.PackHeader), 0)
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return tp, nil
}

// publish makes the temp pack tp durable under its final name, writes its
// index and adds it to the Store. mod, when not zero, becomes the pack's
// modification time. tp's file is closed, and removed on failure; its
// entries are dropped, as the Store reads them from the index's bytes,
// unless keep is set: then they are left as they are, in their order, for
// a batch that still looks objects up in them.
func (s *Store) publish(tp *tmpPack, mod time.Time, keep bool) (p *packset.Pack, err error) {
	f := tp.f
	tmp, renamed := f.Name(), false
	defer func() {
		if err != nil {
			f.Close()
			if !renamed {
				os.Remove(tmp)
			}
		}
	}()
	var idx []byte
	if keep {
		idx, err = tp.entries.EncodeCopy(tp.size)
	} else {
		idx, err = tp.entries.Encode(tp.size)
		tp.entries = packidx.List{}
	}
	if err != nil {
		return nil, err
	}
	table, err := packidx.Open(idx, packidx.OpenOptions{})
	if err != nil {
		return nil, err
	}
	name := "pack-" + packidx.Checksum(idx).String()
	dir := filepath.Join(s.root, PackDir)
	if err := s.ensureDir(dir); err != nil {
		return nil, err
	}
	if mod.IsZero() {
		// A pack without an index an hour old is debris of a crash, to be
		// cleaned: this one must look new while it waits for its index.
		mod = time.Now()
	}
	// The index is written and synced to a temp file while the pack is
	// synced (a commit of a few tiles waits for each sync in turn); each
	// is renamed into place after that, the pack first.
	var itmp string
	var staged errgroup.Group
	staged.Go(func() (err error) {
		itmp, err = stageFile(dir, idx)
		return err
	})
	err = os.Chtimes(tmp, mod, mod)
	if err == nil {
		err = f.Chmod(0o444)
	}
	if err == nil {
		err = f.Sync()
	}
	if serr := staged.Wait(); err == nil {
		err = serr
	} else if serr == nil {
		os.Remove(itmp)
	}
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.Remove(itmp)
		}
	}()
	if err := f.Close(); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, s.packPath(name, ".pack")); err != nil {
		return nil, err
	}
	renamed = true
	if err := writeback.SyncDir(dir); err != nil {
		return nil, err
	}
	if err := os.Rename(itmp, s.packPath(name, ".idx")); err != nil {
		return nil, err
	}
	if err := writeback.SyncDir(dir); err != nil {
		return nil, err
	}
	p = &packset.Pack{Name: name, Table: table}
	s.publishPack(p)
	return p, nil
}
