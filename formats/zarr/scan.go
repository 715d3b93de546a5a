package zarr

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
)

// ErrNotStore is returned by Walk for a directory whose root holds none of
// .zgroup, .zarray and zarr.json.
var ErrNotStore = errors.New("not a zarr store")

// Role is what a file is to its store.
type Role int

// Roles of a store's files.
const (
	// RoleMeta is a metadata document (.zarray, .zgroup, .zattrs,
	// .zmetadata, zarr.json), kept byte for byte.
	RoleMeta Role = iota + 1
	// RoleChunk is a chunk file of an array, at grid coordinates.
	RoleChunk
	// RoleShard is a shard file of a sharded v3 array (Array.Sharding
	// set), at shard grid coordinates: read its index to find its inner
	// chunks.
	RoleShard
	// RoleOther is any other file, to keep whole as an opaque member; the
	// Reason says why it is not a chunk.
	RoleOther
)

func (r Role) String() string {
	switch r {
	case RoleMeta:
		return "meta"
	case RoleChunk:
		return "chunk"
	case RoleShard:
		return "shard"
	case RoleOther:
		return "other"
	}
	return fmt.Sprintf("role(%d)", int(r))
}

// File is one file of a store.
type File struct {
	Path   string // slash-separated, relative to the store root
	Size   int64
	Role   Role
	Array  *Array  // RoleChunk, RoleShard: the array it belongs to
	Coords []int64 // RoleChunk, RoleShard: grid coordinates
	Data   []byte  // RoleMeta: the document's bytes
	Reason string  // RoleOther: why it is not a chunk
	// Info is the file's lstat, as the walk read it (a caller that needs
	// times and inodes, to tell whether the file changed since it last
	// saw it, need not stat every file again).
	Info fs.FileInfo
}

// Node is a group or array of a store: a directory holding zarr.json,
// .zarray or .zgroup.
type Node struct {
	Path    string // "" for the root
	Version int    // 2 or 3
	Array   *Array // set for an array
	Group   *Group // set for a group
	// Err says why the node's metadata was not understood; its chunk
	// files are then RoleOther.
	Err error
}

// Store is what Walk found.
type Store struct {
	Version int // the root node's: 2 or 3
	// Unsupported, when set, says why the store is not read as Zarr (GDAL
	// 3.6's pre-release v3 layout, unreadable root metadata): every file is
	// then RoleOther with this reason, to be kept as plain files.
	Unsupported string
	Nodes       []*Node // sorted by path
}

// Detect reports whether the directory fsys is the root of a zarr store:
// it holds a regular file (not a link) named .zgroup, .zarray or zarr.json.
func Detect(fsys fs.FS) bool {
	entries, err := fs.ReadDir(fsys, ".")
	return err == nil && (regular(entries, ZGroup) || regular(entries, ZArray) || regular(entries, ZarrJSON))
}

// regular reports whether entries hold a regular file named name.
func regular(entries []fs.DirEntry, name string) bool {
	i := sort.Search(len(entries), func(i int) bool { return entries[i].Name() >= name })
	return i < len(entries) && entries[i].Name() == name && entries[i].Type().IsRegular()
}

// ScanDir opens dir as an os.Root (so no path escapes it) and scans it.
func ScanDir(dir string) (*Store, []File, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("zarr store %s: %w", dir, err)
	}
	defer root.Close()
	st, files, err := Scan(root.FS())
	if err != nil {
		return nil, nil, fmt.Errorf("zarr store %s: %w", dir, err)
	}
	return st, files, nil
}

// Scan is Walk collecting the files.
func Scan(fsys fs.FS) (*Store, []File, error) {
	var files []File
	st, err := Walk(fsys, func(f *File) error {
		files = append(files, *f)
		return nil
	})
	return st, files, err
}

// Walk calls fn for every file of the store rooted at fsys, each once, in a
// deterministic order (fs.WalkDir's: by path, a directory's contents right
// after its name), on the caller's goroutine; fn may keep f. Symbolic links
// and other non-regular files are never followed or read: they are
// RoleOther. A file belongs to the nearest node above it. An error from fn
// stops the walk and is returned.
func Walk(fsys fs.FS, fn func(f *File) error) (*Store, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("zarr store: %w", err)
	}
	if !regular(entries, ZGroup) && !regular(entries, ZArray) && !regular(entries, ZarrJSON) {
		return nil, ErrNotStore
	}
	w := &walker{fsys: fsys, fn: fn, st: &Store{}}
	if regular(entries, ZarrJSON) {
		data, _, err := w.readMeta(ZarrJSON)
		if err != nil {
			return nil, err
		}
		if IsDraftV3(data) {
			w.st.Unsupported = "zarr.json is the pre-release v3 layout (meta/root/...), which chunkvc does not read"
		}
	}
	if err := w.dir(".", nil); err != nil {
		return nil, err
	}
	sort.Slice(w.st.Nodes, func(i, j int) bool { return w.st.Nodes[i].Path < w.st.Nodes[j].Path })
	return w.st, nil
}

type walker struct {
	fsys fs.FS
	fn   func(*File) error
	st   *Store
}

// storePath is the store path of name in dir ("." is the root).
func storePath(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

func (w *walker) dir(dir string, owner *Node) error {
	entries, err := fs.ReadDir(w.fsys, dir)
	if err != nil {
		return fmt.Errorf("zarr store: %w", err)
	}
	meta := map[string][]byte{}
	for _, e := range entries {
		if isMetaName(e.Name()) && e.Type().IsRegular() {
			data, _, err := w.readMeta(storePath(dir, e.Name()))
			if err != nil {
				return err
			}
			meta[e.Name()] = data
		}
	}
	if n := w.node(dir, meta); n != nil {
		w.st.Nodes = append(w.st.Nodes, n)
		owner = n
		if n.Path == "" {
			w.root(n)
		}
	}
	for i, e := range entries {
		// An entry is let go once taken: a folder of a million chunk files
		// lists 150-200 bytes a file, which would otherwise stay until the
		// last file, beside everything the caller made of the others.
		entries[i] = nil
		p := storePath(dir, e.Name())
		if e.IsDir() {
			if err := w.dir(p, owner); err != nil {
				return err
			}
			continue
		}
		f := &File{Path: p}
		if info, err := e.Info(); err == nil {
			f.Size, f.Info = info.Size(), info
		} else {
			return fmt.Errorf("zarr store: %s: %w", p, err)
		}
		w.classify(f, e, meta, owner)
		if err := w.fn(f); err != nil {
			return err
		}
	}
	return nil
}

// root records the root node's version, or why the store is unsupported.
func (w *walker) root(n *Node) {
	w.st.Version = n.Version
	if n.Err != nil && w.st.Unsupported == "" {
		w.st.Unsupported = "root metadata: " + n.Err.Error()
	}
}

func (w *walker) classify(f *File, e fs.DirEntry, meta map[string][]byte, owner *Node) {
	other := func(reason string) { f.Role, f.Reason = RoleOther, reason }
	switch {
	case e.Type()&fs.ModeSymlink != 0:
		other("symbolic link, not followed")
	case !e.Type().IsRegular():
		other("not a regular file")
	case w.st.Unsupported != "":
		other(w.st.Unsupported)
	case isMetaName(e.Name()):
		if data, ok := meta[e.Name()]; ok && data != nil {
			f.Role, f.Data = RoleMeta, data
		} else {
			other(fmt.Sprintf("metadata document over %d bytes", MaxMetaSize))
		}
	case owner == nil:
		other("outside every group and array")
	case owner.Err != nil:
		other(fmt.Sprintf("in %s, whose metadata is not understood", nodeName(owner.Path)))
	case owner.Array == nil:
		other(fmt.Sprintf("in group %s, not an array", nodeName(owner.Path)))
	default:
		coords, err := owner.Array.ParseChunkFile(f.Path)
		if err != nil {
			other(err.Error())
			return
		}
		f.Role, f.Array, f.Coords = RoleChunk, owner.Array, coords
		if owner.Array.Sharding != nil {
			f.Role = RoleShard
		}
	}
}

func nodeName(p string) string {
	if p == "" {
		return "the root"
	}
	return p
}

func isMetaName(n string) bool {
	switch n {
	case ZArray, ZGroup, ZAttrs, ZMetadata, ZarrJSON:
		return true
	}
	return false
}

// node reads a directory's metadata documents into a node, nil when it
// holds none that makes one. zarr.json (v3) wins over v2 documents beside
// it, as stores written for both versions hold both.
func (w *walker) node(dir string, meta map[string][]byte) *Node {
	p := dir
	if p == "." {
		p = ""
	}
	n := &Node{Path: p, Version: 3}
	doc := func(name string) string { return storePath(dir, name) }
	zj, zjOK := meta[ZarrJSON]
	za, zaOK := meta[ZArray]
	zg, zgOK := meta[ZGroup]
	switch {
	case zjOK:
		if zj == nil {
			n.Err = metaErr(doc(ZarrJSON), "over %d bytes", MaxMetaSize)
		} else if w.st.Unsupported == "" {
			n.Array, n.Group, n.Err = ParseZarrJSON(doc(ZarrJSON), zj)
		}
		return n
	case zaOK && zgOK:
		n.Version, n.Err = 2, metaErr(doc(ZArray), "beside a .zgroup")
	case zaOK:
		n.Version = 2
		if n.Array, n.Err = ParseZArray(doc(ZArray), za); n.Err == nil {
			if attrs, ok := meta[ZAttrs]; ok && attrs != nil {
				n.Err = n.Array.WithAttrs(doc(ZAttrs), attrs)
			}
		}
	case zgOK:
		n.Version = 2
		if n.Group, n.Err = ParseZGroup(doc(ZGroup), zg); n.Err == nil {
			if attrs, ok := meta[ZAttrs]; ok && attrs != nil {
				_, n.Err = ParseZAttrs(doc(ZAttrs), attrs)
				n.Group.Attrs = attrs
			}
		}
	default:
		return nil
	}
	if n.Err != nil {
		n.Array, n.Group = nil, nil
	}
	return n
}

// readMeta reads a metadata document: ok is false when there is no regular
// file p; data is nil when it is over MaxMetaSize.
func (w *walker) readMeta(p string) (data []byte, ok bool, err error) {
	f, err := w.fsys.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("zarr store: %w", err)
	}
	defer func() { _ = f.Close() }() // read-only: nothing to lose
	info, err := f.Stat()
	if err != nil {
		return nil, false, fmt.Errorf("zarr store: %s: %w", p, err)
	}
	if !info.Mode().IsRegular() {
		return nil, false, nil
	}
	data, err = io.ReadAll(io.LimitReader(f, MaxMetaSize+1))
	if err != nil {
		return nil, false, fmt.Errorf("zarr store: %s: %w", p, err)
	}
	if len(data) > MaxMetaSize {
		return nil, true, nil
	}
	return data, true, nil
}
