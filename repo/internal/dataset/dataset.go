// Package dataset turns a Zarr store, a directory chunkvc tracks as one
// unit (docs/DATASETS.md), into what a commit keeps of it, and writes a
// store back from that.
//
// Contract:
//
//   - Build walks a store (formats/zarr Walk, through an os.Root: no
//     symbolic link is followed out of it) and returns a Plan: every chunk
//     with the bytes that make it (file, offset, length), and the members
//     the dataset layout blob must list (metadata documents, shard files,
//     files the format does not know, chunk files too large for one
//     chunk), each as pieces that are inline bytes or chunks by key.
//   - Plan.Encode, given each chunk's ID, returns the dataset layout blob
//     (manifest.EncodeDataset), the manifest's chunk lines and the dataset
//     digest (manifest.DatasetDigest over every file).
//   - Restore writes the store a layout blob and chunk lines describe into
//     an empty directory: every file, every byte, nothing else; a chunk
//     file's path comes back from its array's metadata, which the layout
//     holds.
//
// Glossary: member, a file of the store; listed member, one the layout
// blob lists (anything but a plain chunk file); source, where a chunk's
// bytes lie in the work tree.
package dataset

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/chunkvc/chunkvc/formats"
	"github.com/chunkvc/chunkvc/formats/zarr"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/statcache"
)

// ErrNotRegular is a member of a store that is neither a folder nor a
// regular file: Build refuses it, naming it.
var ErrNotRegular = errors.New("not a regular file (links and devices are not tracked in a store)")

// pieceLen is how a file or inner chunk over formats.MaxChunk is cut: in
// pieces of this size, content-keyed ("<key>@"), so that an unchanged
// piece keeps its ID.
const pieceLen = formats.MaxChunk / 2

// Source is one chunk: its key and where its bytes lie in the store.
type Source struct {
	Key      string // as in the manifest ("<key>@" when content-keyed)
	Path     string // store-relative file holding it
	Off, Len int64
}

// Item is one piece of a listed member: inline bytes, or the chunk Chunk
// (an index into Plan.Chunks).
type Item struct {
	Len    int64
	Inline []byte
	Chunk  int // -1 for inline bytes
}

// Member is a listed member of the store.
type Member struct {
	Path  string
	Role  manifest.Role
	Size  int64
	Items []Item
}

// Plan is a store ready to be hashed and stored.
type Plan struct {
	Store  *zarr.Store
	Listed []Member // path order
	Chunks []Source
	// Files is every file of the store with the chunk it is (chunk files)
	// or -1 (listed members), in path order: what the digest covers.
	Files []PlanFile
}

// PlanFile is one file of the store: 64 bytes and its path, a million
// times over in a store of small chunks.
type PlanFile struct {
	Path   string
	Stat   statcache.Stat // the lstat the walk read; its Size is the file's
	Mode   fs.FileMode
	Chunk  int32 // the chunk a plain chunk file is, else -1
	Listed int32 // its index in Listed, else -1
}

// Size is the file's size.
func (f *PlanFile) Size() int64 { return f.Stat.Size }

// Build reads the store at dir. A directory that is not a Zarr store is
// zarr.ErrNotStore; a store the format cannot read as Zarr (Unsupported)
// is an error naming why, for the caller to keep it as plain files.
func Build(dir string) (*Plan, error) { return BuildSized(dir, 0) }

// BuildSized is Build with room made for about files files: a plan's
// lists grown by doubling cost a commit of 20,000 files 60 ms of copying
// into freshly faulted pages, more than the rest of the plan.
func BuildSized(dir string, files int) (*Plan, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("zarr store %s: %w", dir, err)
	}
	defer root.Close()
	files = min(max(files, 0), 1<<24)
	b := &builder{root: root, p: &Plan{Files: make([]PlanFile, 0, files), Chunks: make([]Source, 0, files)}}
	st, err := zarr.Walk(statFS{root: root, dir: dir}, b.add)
	if err != nil {
		return nil, fmt.Errorf("zarr store %s: %w", dir, err)
	}
	if st.Unsupported != "" {
		return nil, fmt.Errorf("zarr store %s: %s", dir, st.Unsupported)
	}
	b.p.Store = st
	slices.SortFunc(b.p.Files, func(a, b PlanFile) int { return strings.Compare(a.Path, b.Path) })
	slices.SortFunc(b.p.Listed, func(a, b Member) int { return strings.Compare(a.Path, b.Path) })
	for i := range b.p.Files {
		b.p.Files[i].Listed = -1
	}
	li := 0
	for i := range b.p.Files {
		if f := &b.p.Files[i]; li < len(b.p.Listed) && b.p.Listed[li].Path == f.Path {
			f.Listed = int32(li)
			li++
		}
	}
	return b.p, nil
}

type builder struct {
	root *os.Root
	p    *Plan
}

// add takes one file of the walk.
func (b *builder) add(f *zarr.File) error {
	if strings.Contains(path.Base(f.Path), tmpMark) {
		return nil // a file Update was writing when it stopped: not a member
	}
	if f.Info == nil {
		return fmt.Errorf("%s: no lstat", f.Path) // a walk of statFS gives every file one
	}
	pf := PlanFile{Path: f.Path, Mode: f.Info.Mode(), Stat: statcache.StatOf(f.Info), Chunk: -1}
	if pf.Stat.Size != f.Size {
		return fmt.Errorf("%s: size %d, lstat %d", f.Path, f.Size, pf.Stat.Size)
	}
	switch {
	case f.Role == zarr.RoleMeta:
		b.list(f, manifest.RoleDocument, []Item{{Len: int64(len(f.Data)), Inline: f.Data, Chunk: -1}})
	case f.Role == zarr.RoleChunk && f.Size > 0 && f.Size <= formats.MaxChunk:
		key, err := f.Array.ChunkKey(f.Coords)
		if err != nil {
			return fmt.Errorf("%s: %w", f.Path, err)
		}
		if len(b.p.Chunks) >= math.MaxInt32 {
			return fmt.Errorf("%s: more than %d chunks in one store", f.Path, math.MaxInt32)
		}
		pf.Chunk = int32(len(b.p.Chunks))
		b.p.Chunks = append(b.p.Chunks, Source{Key: key, Path: f.Path, Len: f.Size})
	case f.Role == zarr.RoleChunk && f.Size > 0:
		key, err := f.Array.ChunkKey(f.Coords)
		if err != nil {
			return fmt.Errorf("%s: %w", f.Path, err)
		}
		b.list(f, manifest.RolePieces, b.cut(key+"@", f.Path, 0, f.Size, nil))
	case f.Role == zarr.RoleShard:
		items, err := b.shard(f)
		if err != nil {
			return err
		}
		b.list(f, manifest.RoleShard, items)
	default: // other files, and empty chunk files
		if fi, err := b.root.Lstat(f.Path); err != nil || !fi.Mode().IsRegular() {
			if err == nil {
				err = ErrNotRegular
			}
			return fmt.Errorf("%s: %w", f.Path, err)
		}
		items, err := b.whole(f)
		if err != nil {
			return err
		}
		b.list(f, manifest.RoleOther, items)
	}
	b.p.Files = append(b.p.Files, pf)
	return nil
}

func (b *builder) list(f *zarr.File, role manifest.Role, items []Item) {
	b.p.Listed = append(b.p.Listed, Member{Path: f.Path, Role: role, Size: f.Size, Items: items})
}

// cut adds the chunks of bytes [off, off+n) of path, in pieces of at
// most pieceLen, keyed key, to items.
func (b *builder) cut(key, path string, off, n int64, items []Item) []Item {
	for n > 0 {
		l := min(n, pieceLen)
		items = append(items, Item{Len: l, Chunk: len(b.p.Chunks)})
		b.p.Chunks = append(b.p.Chunks, Source{Key: key, Path: path, Off: off, Len: l})
		off, n = off+l, n-l
	}
	return items
}

// whole keeps a file the format does not know: small ones inline, others
// as content-keyed pieces named after the file's path.
func (b *builder) whole(f *zarr.File) ([]Item, error) {
	if f.Size > 64<<10 {
		key := "~f/" + hashing.Sum([]byte(f.Path)).String()[:16] + "@"
		return b.cut(key, f.Path, 0, f.Size, nil), nil
	}
	data, err := b.read(f.Path, 0, f.Size)
	if err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, nil
	}
	return []Item{{Len: int64(len(data)), Inline: data, Chunk: -1}}, nil
}

// shard keeps a shard file as its inner chunks (keyed by their global
// coordinates) and, inline, its index and any gap.
func (b *builder) shard(f *zarr.File) ([]Item, error) {
	fh, err := b.root.Open(f.Path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	s := f.Array.Sharding
	idx, err := s.ReadIndex(f.Path, fh, f.Size)
	if err != nil {
		// Not readable as a shard: kept whole, as a file the format does
		// not know (its bytes come back all the same).
		return b.whole(f)
	}
	var items []Item
	for _, pc := range idx.Pieces(f.Size) {
		if pc.Kind != zarr.PieceChunk {
			data, err := readAt(fh, f.Path, pc.Off, pc.Len)
			if err != nil {
				return nil, err
			}
			items = append(items, Item{Len: pc.Len, Inline: data, Chunk: -1})
			continue
		}
		in := idx.Chunks[pc.Chunk]
		key, err := f.Array.ChunkKey(s.GlobalCoords(f.Coords, in.Coords))
		if err != nil {
			return nil, fmt.Errorf("%s: inner chunk %v: %w", f.Path, in.Coords, err)
		}
		if pc.Len > formats.MaxChunk {
			items = b.cut(key+"@", f.Path, pc.Off, pc.Len, items)
			continue
		}
		items = append(items, Item{Len: pc.Len, Chunk: len(b.p.Chunks)})
		b.p.Chunks = append(b.p.Chunks, Source{Key: key, Path: f.Path, Off: pc.Off, Len: pc.Len})
	}
	return items, nil
}

func (b *builder) read(path string, off, n int64) ([]byte, error) {
	fh, err := b.root.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return readAt(fh, path, off, n)
}

func readAt(r io.ReaderAt, path string, off, n int64) ([]byte, error) {
	data := make([]byte, n)
	if _, err := r.ReadAt(data, off); err != nil && !(errors.Is(err, io.EOF) && n == 0) {
		return nil, fmt.Errorf("%s: bytes %d..+%d: %w", path, off, n, err)
	}
	return data, nil
}

// ChunkLines returns the manifest's chunk line of every chunk of the plan,
// in plan order, each with its key and size and a zero ID for the reading
// to fill: one list a chunk, where an ID list and the chunk lines made
// from it were two (32 and 64 bytes a chunk) side by side.
func (p *Plan) ChunkLines() []manifest.Chunk {
	chunks := make([]manifest.Chunk, len(p.Chunks))
	for i, c := range p.Chunks {
		chunks[i] = manifest.Chunk{Key: c.Key, Size: c.Len}
	}
	return chunks
}

// Encode returns the dataset layout blob, the manifest's chunk lines (in
// natural key order, content keys completed: manifest.Normalize) and the
// dataset digest, given the chunk lines of the plan (ChunkLines) with
// every ID filled in. It sorts chunks in place and returns them (fewer
// when a chunk repeats): the caller must not use chunks after. It does
// not read p.Chunks, which the caller may drop once they are read.
func (p *Plan) Encode(chunks []manifest.Chunk) (layout []byte, lines []manifest.Chunk, digest hashing.ID, err error) {
	members := make([]manifest.Member, len(p.Listed))
	blobIDs := make([]hashing.ID, len(p.Listed))
	for i, m := range p.Listed {
		var l manifest.Layout
		for _, it := range m.Items {
			if it.Chunk < 0 {
				l.Append(manifest.Piece{Len: it.Len, Inline: it.Inline})
			} else if it.Chunk >= len(chunks) {
				return nil, nil, digest, fmt.Errorf("%s: chunk %d of %d", m.Path, it.Chunk, len(chunks))
			} else {
				l.Append(manifest.Piece{Len: it.Len, Chunk: true, ID: chunks[it.Chunk].ID})
			}
		}
		members[i] = manifest.Member{Path: m.Path, Role: m.Role, Layout: &l}
		blobIDs[i] = hashing.Sum(l.Encode())
	}
	if layout, err = manifest.EncodeDataset(members); err != nil {
		return nil, nil, digest, err
	}
	d := manifest.NewDatasetDigest()
	for _, f := range p.Files {
		id := hashing.ID{}
		switch {
		case f.Chunk >= int32(len(chunks)):
			return nil, nil, digest, fmt.Errorf("%s: chunk %d of %d", f.Path, f.Chunk, len(chunks))
		case f.Chunk >= 0:
			id = chunks[f.Chunk].ID
		case f.Listed >= 0:
			id = blobIDs[f.Listed]
		}
		if err := d.Add(f.Path, f.Size(), id); err != nil {
			return nil, nil, digest, err
		}
	}
	if lines, err = manifest.Normalize(chunks); err != nil {
		return nil, nil, digest, err
	}
	return layout, lines, d.Sum(), nil
}

// ChunkOrder returns the indexes of p.Chunks in (path, offset) order, the
// seen cache's order.
func (p *Plan) ChunkOrder() []int32 {
	order := make([]int32, len(p.Chunks))
	for i := range order {
		order[i] = int32(i)
	}
	less := func(a, b int32) int {
		x, y := &p.Chunks[a], &p.Chunks[b]
		if c := strings.Compare(x.Path, y.Path); c != 0 {
			return c
		}
		return cmp.Compare(x.Off, y.Off)
	}
	// A walk lists most stores in this order already: a check costs less
	// than a sort.
	if !slices.IsSortedFunc(order, less) {
		slices.SortFunc(order, less)
	}
	return order
}

// FileStat is the lstat the walk read of the store's file name.
func (p *Plan) FileStat(name string) (statcache.Stat, bool) {
	at, ok := slices.BinarySearchFunc(p.Files, name, func(f PlanFile, name string) int { return strings.Compare(f.Path, name) })
	if !ok {
		return statcache.Stat{}, false
	}
	return p.Files[at].Stat, true
}
