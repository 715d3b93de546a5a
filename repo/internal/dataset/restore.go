package dataset

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
	"testing/fstest"

	"github.com/chunkvc/chunkvc/formats/zarr"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
)

// Fetch returns the bytes of chunk id (checked against id before use).
type Fetch func(id hashing.ID) ([]byte, error)

// Version is one committed version of a store: its dataset layout blob
// and its manifest's chunk lines. The zero Version is no store.
type Version struct {
	Layout []byte
	Chunks []manifest.Chunk
}

// ErrNotEmpty is returned by Restore for a directory that holds files.
var ErrNotEmpty = errors.New("not an empty directory")

// ErrExtra is returned by Update when the directory holds files that
// neither version has (unless told to remove them).
var ErrExtra = errors.New("files that no version of the store has")

// tmpMark is in the name of every file Update writes before renaming it
// into place; the work-tree walk skips such names (repo.trackedFiles).
const tmpMark = ".chunkvc-tmp-"

// Restore writes the store v describes into dir, which must be missing or
// empty: every file, every byte, nothing else.
func Restore(dir string, v Version, fetch Fetch) error {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("restore zarr store into %s: %w", dir, ErrNotEmpty)
	}
	_, err := Update(dir, Version{}, v, fetch, false)
	return err
}

// Update makes dir hold the store cur, where it holds old now (as the
// caller has checked: status). Only files whose bytes differ between the
// versions are written (each to a temporary file beside it, renamed into
// place once whole); files old has and cur has not are removed, with the
// folders that empties. A file neither version has is ErrExtra, unless
// removeExtra. Every chunk's bytes are checked against its ID before they
// are written. Paths come from untrusted manifests: they are checked
// (manifest.CheckPath) and used through an os.Root, so nothing outside
// dir is touched. It returns how many files it wrote.
func Update(dir string, old, cur Version, fetch Fetch, removeExtra bool) (written int, err error) {
	want, err := fileList(cur)
	if err != nil {
		return 0, err
	}
	var had []file
	if old.Layout != nil {
		if had, err = fileList(old); err != nil {
			return 0, fmt.Errorf("previous version: %w", err)
		}
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return 0, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return 0, err
	}
	defer root.Close()
	present, err := listFiles(root)
	if err != nil {
		return 0, err
	}
	there := func(p string) bool { _, ok := slices.BinarySearch(present, p); return ok }
	var extra []string
	for _, p := range present {
		if _, ok := find(had, p); !ok {
			if _, ok := find(want, p); !ok {
				extra = append(extra, p)
			}
		}
	}
	if len(extra) > 0 && !removeExtra {
		return 0, fmt.Errorf("zarr store %s: %w: %s", dir, ErrExtra, strings.Join(extra[:min(len(extra), 5)], ", "))
	}
	w := &writer{root: root, fetch: fetch}
	for _, f := range want {
		h, inOld := find(had, f.path)
		if inOld && h.sum == f.sum && there(f.path) {
			continue // same bytes in both versions, and there
		}
		if !inOld && there(f.path) && holds(root, f.path, f.target) {
			continue // no version vouches for it, but its bytes are right
		}
		if err := w.file(f.path, f.target); err != nil {
			return written, err
		}
		written++
	}
	for _, p := range present {
		if _, ok := find(want, p); !ok {
			if err := root.Remove(p); err != nil {
				return written, err
			}
			removeEmptyParents(root, p)
		}
	}
	return written, nil
}

// target is one file of a version: what identifies its bytes (a chunk
// file's chunk ID, a listed member's layout blob ID) and where they come
// from. A chunk file is one chunk: it keeps no pieces of its own, so that
// a version of a million chunk files takes 56 bytes a file here, not the
// 150 a list of pieces each took.
type target struct {
	size   int64
	sum    hashing.ID
	layout *manifest.Layout // a listed member's pieces; nil for a chunk file
	doc    bool             // a metadata document (inline pieces)
}

// pieces are the pieces of t's bytes, in order.
func (t target) pieces() []manifest.Piece {
	if t.layout == nil {
		return []manifest.Piece{{Len: t.size, Chunk: true, ID: t.sum}}
	}
	var out []manifest.Piece
	for _, pc := range t.layout.All() {
		out = append(out, pc)
	}
	return out
}

// file is one file of a version and its path in the store.
type file struct {
	path string
	target
}

// fileList lists the files of v, sorted by path: a sorted list and a
// binary search, where a map of a million files took twice the memory.
func fileList(v Version) ([]file, error) {
	members, err := manifest.DecodeDataset(v.Layout)
	if err != nil {
		return nil, err
	}
	arrays, err := arraysOf(members)
	if err != nil {
		return nil, err
	}
	out := make([]file, 0, len(v.Chunks)+len(members))
	for _, c := range v.Chunks {
		p, ok, err := chunkFile(arrays, c.Key)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, file{path: p, target: target{size: c.Size, sum: c.ID}})
		}
	}
	for _, m := range members {
		t := target{size: m.Layout.Size, sum: hashing.Sum(m.Layout.Encode()), layout: m.Layout, doc: m.Role == manifest.RoleDocument}
		out = append(out, file{path: m.Path, target: t})
	}
	slices.SortFunc(out, func(a, b file) int { return strings.Compare(a.path, b.path) })
	for i := 1; i < len(out); i++ {
		if out[i].path == out[i-1].path {
			return nil, fmt.Errorf("zarr store file %s twice in its manifest", out[i].path)
		}
	}
	return out, nil
}

// find returns the target of path p in files (sorted by path).
func find(files []file, p string) (target, bool) {
	i, ok := slices.BinarySearchFunc(files, p, func(f file, p string) int { return strings.Compare(f.path, p) })
	if !ok {
		return target{}, false
	}
	return files[i].target, true
}

// targets lists the files of v by path (a three-way merge's sides).
func targets(v Version) (map[string]target, error) {
	files, err := fileList(v)
	if err != nil {
		return nil, err
	}
	out := make(map[string]target, len(files))
	for _, f := range files {
		out[f.path] = f.target
	}
	return out, nil
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

// listFiles returns the store-relative paths of the files under root,
// sorted (as strings: a walk's order puts "a/x" before "a.b");
// temporary files a killed Update left are removed. Folders are read a
// batch of entries at a time, their types from the folder itself: a walk
// of root.FS() lstats every entry and holds a whole folder's answers, 270
// bytes a file of a folder of a million, where a path takes 32.
func listFiles(root *os.Root) ([]string, error) {
	var out []string
	dirs := []string{"."}
	for len(dirs) > 0 {
		dir := dirs[len(dirs)-1]
		dirs = dirs[:len(dirs)-1]
		d, err := root.Open(dir)
		if err != nil {
			return nil, err
		}
		for {
			es, err := d.ReadDir(4096)
			for _, e := range es {
				p := e.Name()
				if dir != "." {
					p = dir + "/" + p
				}
				switch {
				case e.IsDir():
					dirs = append(dirs, p)
				case strings.Contains(e.Name(), tmpMark):
					if err := root.Remove(p); err != nil {
						_ = d.Close()
						return nil, err
					}
				default:
					out = append(out, p)
				}
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				_ = d.Close()
				return nil, err
			}
		}
		_ = d.Close() // read-only
	}
	slices.Sort(out)
	return out, nil
}

// removeEmptyParents removes the folders above p that its removal left
// empty (Remove refuses a folder that is not).
func removeEmptyParents(root *os.Root, p string) {
	for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
		if root.Remove(dir) != nil {
			return
		}
	}
}

func sortedKeys(m map[string]target) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// holds reports whether the file p under root already has t's bytes, for
// a file no version vouches for (a store left half-written by a killed
// checkout, or taken over with --force): a chunk file is hashed, a member
// of inline bytes compared. Anything else is rewritten.
func holds(root *os.Root, p string, t target) bool {
	fi, err := root.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != t.size || t.size > maxCompare {
		return false
	}
	b, err := root.ReadFile(p)
	if err != nil || int64(len(b)) != t.size {
		return false
	}
	pieces := t.pieces()
	if len(pieces) == 1 && pieces[0].Chunk {
		return hashing.Sum(b) == pieces[0].ID
	}
	var off int64
	for _, pc := range pieces {
		end := off + int64(len(pc.Inline))
		if pc.Chunk || pc.Derive != "" || end > int64(len(b)) || string(b[off:end]) != string(pc.Inline) {
			return false
		}
		off += int64(len(pc.Inline))
	}
	return off == t.size
}

// maxCompare bounds what holds reads of one file (a chunk file is at most
// a chunk; a larger member is rewritten rather than held in memory).
const maxCompare = 64 << 20

type writer struct {
	root  *os.Root
	fetch Fetch
}

// file writes p from t's pieces into a temporary file beside it, then
// renames it into place.
func (w *writer) file(p string, t target) (err error) {
	if err := manifest.CheckPath(p); err != nil {
		return err
	}
	if dir := path.Dir(p); dir != "." {
		if err := w.root.MkdirAll(dir, 0o777); err != nil {
			return err
		}
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := p + tmpMark + hex.EncodeToString(rnd[:])
	f, err := w.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = w.root.Rename(tmp, p)
		}
		if err != nil {
			_ = w.root.Remove(tmp)
		}
	}()
	var n int64
	for _, pc := range t.pieces() {
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
	if n != t.size {
		return fmt.Errorf("%s: wrote %d bytes of %d", p, n, t.size)
	}
	return nil
}
