package dataset

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"testing/fstest"

	"github.com/chunkvc/chunkvc/formats/zarr"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
)

// Fetch returns the bytes of chunk id (checked against id by Restore).
type Fetch func(id hashing.ID) ([]byte, error)

// ErrNotEmpty is returned by Restore for a directory that holds files.
var ErrNotEmpty = errors.New("not an empty directory")

// Restore writes the store that layout (a dataset layout blob) and chunks
// (the manifest's chunk lines) describe into dir, which must be missing or
// empty: listed members from their layouts, chunk files at the path their
// array's metadata gives each key. Every chunk's bytes are checked against
// its ID before they are written. Paths come from untrusted manifests:
// they are checked (manifest.CheckPath) and written through an os.Root, so
// nothing lands outside dir.
func Restore(dir string, layout []byte, chunks []manifest.Chunk, fetch Fetch) error {
	members, err := manifest.DecodeDataset(layout)
	if err != nil {
		return err
	}
	arrays, err := arraysOf(members)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) > 0 {
		if err == nil {
			err = ErrNotEmpty
		}
		return fmt.Errorf("restore zarr store into %s: %w", dir, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	w := &writer{root: root, fetch: fetch}
	for _, c := range chunks {
		p, ok, err := chunkFile(arrays, c.Key)
		if err != nil {
			return err
		}
		if ok {
			if err := w.file(p, c.Size, []manifest.Piece{{Len: c.Size, Chunk: true, ID: c.ID}}); err != nil {
				return err
			}
		}
	}
	for _, m := range members {
		pieces := make([]manifest.Piece, 0, m.Layout.Len())
		for _, pc := range m.Layout.All() {
			pieces = append(pieces, pc)
		}
		if err := w.file(m.Path, m.Layout.Size, pieces); err != nil {
			return err
		}
	}
	return nil
}

// arraysOf reads the arrays of a store from its metadata documents, by
// the key prefix of their chunks.
func arraysOf(members []manifest.Member) (map[string]*zarr.Array, error) {
	docs := fstest.MapFS{}
	for _, m := range members {
		if m.Role != manifest.RoleDocument {
			continue
		}
		var b []byte
		for _, pc := range m.Layout.All() {
			if !pc.IsInline() {
				return nil, fmt.Errorf("zarr metadata %s is not inline in its layout", m.Path)
			}
			b = append(b, pc.Inline...)
		}
		docs[m.Path] = &fstest.MapFile{Data: b, Mode: 0o644}
	}
	st, _, err := zarr.Scan(docs)
	if err != nil {
		return nil, fmt.Errorf("zarr metadata: %w", err)
	}
	arrays := map[string]*zarr.Array{}
	for _, n := range st.Nodes {
		if n.Array != nil {
			arrays[zarr.KeyPrefix(n.Array.Path)] = n.Array
		}
	}
	return arrays, nil
}

// chunkFile returns the store path of the chunk file keyed key, or ok
// false for a chunk that is a piece of a listed member (content keys,
// inner chunks of shards).
func chunkFile(arrays map[string]*zarr.Array, key string) (p string, ok bool, err error) {
	if strings.Contains(key, "@") {
		return "", false, nil
	}
	prefix, coords, good := zarr.ParseKey(key)
	a := arrays[prefix]
	if !good || a == nil {
		return "", false, fmt.Errorf("chunk %s: no array of the store has that key", key)
	}
	if a.Sharding != nil {
		return "", false, nil // inside a shard file, written as a member
	}
	if p, err = a.ChunkFile(coords); err != nil {
		return "", false, fmt.Errorf("chunk %s: %w", key, err)
	}
	return p, true, nil
}

type writer struct {
	root  *os.Root
	fetch Fetch
}

// file writes the new file p of size bytes from pieces.
func (w *writer) file(p string, size int64, pieces []manifest.Piece) (err error) {
	if err := manifest.CheckPath(p); err != nil {
		return err
	}
	if dir := path.Dir(p); dir != "." {
		if err := w.root.MkdirAll(dir, 0o777); err != nil {
			return err
		}
	}
	f, err := w.root.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("zarr store file %s twice in its manifest", p)
		}
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	var n int64
	for _, pc := range pieces {
		data := pc.Inline
		if pc.Chunk {
			if data, err = w.fetch(pc.ID); err != nil {
				return fmt.Errorf("%s: chunk %s: %w", p, pc.ID.Short(), err)
			}
			if int64(len(data)) != pc.Len || hashing.Sum(data) != pc.ID {
				return fmt.Errorf("%s: chunk %s: bytes do not match their id", p, pc.ID.Short())
			}
		} else if pc.Derive != "" {
			return fmt.Errorf("%s: derived bytes (%s) are not written by this version", p, pc.Derive)
		}
		if _, err := f.Write(data); err != nil {
			return err
		}
		n += int64(len(data))
	}
	if n != size {
		return fmt.Errorf("%s: wrote %d bytes of %d", p, n, size)
	}
	return nil
}
