package dataset

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/chunkvc/chunkvc/formats/zarr"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
)

// Members answers, for one committed version of a store, which bytes a
// member path is, without writing the store: what serve and cat read.
// Listed members are found in the layout blob's table, chunk files by
// their key, which their array's metadata gives back from their path
// (Array.ParseChunkFile, then ChunkKey). It holds the decoded table and
// the chunk lines (sorted by key), and nothing per file beyond them; it is
// safe for concurrent use.
type Members struct {
	listed []manifest.Member      // path order
	arrays map[string]*zarr.Array // by array path (not key prefix)
	chunks []manifest.Chunk       // in natural key order (manifest.NaturalLess)

	once sync.Once
	byID *manifest.IDIndex // the chunks by ID, built on first need
}

// Entry is one member of a store: its bytes as a layout (one chunk piece
// for a chunk file) and the ID that names them (a chunk file's chunk ID, a
// listed member's layout blob ID: what the dataset digest binds).
type Entry struct {
	Path   string
	Size   int64
	ID     hashing.ID
	Key    string // the chunk's key for a chunk file, else ""
	Layout *manifest.Layout
	// Chunks are the chunk lines of the chunks Layout uses, once each.
	Chunks []manifest.Chunk
}

// ErrCorrupt wraps the error for a member table that does not agree with
// the manifest's chunk lines: not written by commit.
var ErrCorrupt = errors.New("dataset layout and manifest disagree")

// ErrNoMember wraps the error for a path that is not a member of the
// version: a missing chunk (fill value to a Zarr reader) or no file.
var ErrNoMember = errors.New("not a member of the store")

// Index reads one version of a store: its dataset layout blob and its
// manifest's chunk lines. The chunks slice is kept, not copied, unless it
// is out of natural key order; it must not change while Members is used.
func Index(layout []byte, chunks []manifest.Chunk) (*Members, error) {
	members, err := manifest.DecodeDataset(layout)
	if err != nil {
		return nil, err
	}
	arrays, err := arraysOf(members)
	if err != nil {
		return nil, err
	}
	byPath := make(map[string]*zarr.Array, len(arrays))
	for _, a := range arrays {
		byPath[a.Path] = a
	}
	// A manifest's chunk lines are in natural key order already: kept,
	// not copied (a million lines are ~100 MB).
	byKey := func(a, b manifest.Chunk) int { return cmpKey(a.Key, b.Key) }
	if !slices.IsSortedFunc(chunks, byKey) {
		chunks = slices.Clone(chunks)
		slices.SortFunc(chunks, byKey)
	}
	return &Members{listed: members, arrays: byPath, chunks: chunks}, nil
}

// Listed returns the members the layout blob lists, in path order: read
// only.
func (ms *Members) Listed() []manifest.Member { return ms.listed }

// Lookup returns the member at store-relative path p. A path that is no
// member (a directory, a chunk the manifest lacks, a name no array has) is
// an error wrapping ErrNoMember.
func (ms *Members) Lookup(p string) (Entry, error) {
	if i, ok := slices.BinarySearchFunc(ms.listed, p, func(m manifest.Member, p string) int {
		return strings.Compare(m.Path, p)
	}); ok {
		m := ms.listed[i]
		e := Entry{Path: p, Size: m.Layout.Size, ID: hashing.Sum(m.Layout.Encode()), Layout: m.Layout}
		return e, ms.listedChunks(&e)
	}
	key, ok := ms.chunkKey(p)
	if !ok {
		return Entry{}, fmt.Errorf("%s: %w", p, ErrNoMember)
	}
	i, found := slices.BinarySearchFunc(ms.chunks, key, func(c manifest.Chunk, key string) int { return cmpKey(c.Key, key) })
	if !found {
		return Entry{}, fmt.Errorf("%s (chunk %s): %w", p, key, ErrNoMember)
	}
	c := ms.chunks[i]
	var l manifest.Layout
	l.Append(manifest.Piece{Len: c.Size, Chunk: true, ID: c.ID})
	return Entry{Path: p, Size: c.Size, ID: c.ID, Key: c.Key, Layout: &l, Chunks: []manifest.Chunk{c}}, nil
}

// listedChunks finds the chunk lines of the chunks listed member e uses,
// by ID: a layout that names a chunk the manifest lacks is refused.
func (ms *Members) listedChunks(e *Entry) error {
	ms.once.Do(func() { ms.byID = manifest.NewIDIndex(ms.chunks) })
	seen := map[hashing.ID]bool{}
	for _, pc := range e.Layout.All() {
		if !pc.Chunk || seen[pc.ID] {
			continue
		}
		seen[pc.ID] = true
		at, ok := ms.byID.Find(pc.ID)
		if !ok || ms.chunks[at].Size != pc.Len {
			return fmt.Errorf("%w: member %s uses chunk %s (%d bytes) that the manifest does not list with that size", ErrCorrupt, e.Path, pc.ID, pc.Len)
		}
		e.Chunks = append(e.Chunks, ms.chunks[at])
	}
	return nil
}

// chunkKey returns the key of the chunk file at p: the array is the one
// whose directory is nearest above p and reads p as one of its chunk
// files. A sharded array's shard files are listed members, never keys.
func (ms *Members) chunkKey(p string) (string, bool) {
	if manifest.CheckPath(p) != nil {
		return "", false
	}
	for dir := p; ; {
		dir = path.Dir(dir)
		if dir == "." {
			dir = ""
		}
		if a := ms.arrays[dir]; a != nil && a.Sharding == nil {
			if coords, err := a.ParseChunkFile(p); err == nil {
				if key, err := a.ChunkKey(coords); err == nil {
					return key, true
				}
			}
		}
		if dir == "" {
			return "", false
		}
	}
}

// ArrayChunks returns the chunks of chunks that belong to the array at
// path arrayPath (key prefix zarr.KeyPrefix(arrayPath), content-keyed
// pieces included), in their order.
func ArrayChunks(chunks []manifest.Chunk, arrayPath string) []manifest.Chunk {
	prefix := zarr.KeyPrefix(arrayPath)
	var out []manifest.Chunk
	for _, c := range chunks {
		key, _, _ := strings.Cut(c.Key, "@")
		if pr, _, ok := zarr.ParseKey(key); ok && pr == prefix {
			out = append(out, c)
		}
	}
	return out
}

// HasArray reports whether the version has an array at store-relative
// path arrayPath.
func (ms *Members) HasArray(arrayPath string) bool { return ms.arrays[arrayPath] != nil }

// cmpKey orders keys as manifest.NaturalLess does.
func cmpKey(a, b string) int {
	switch {
	case manifest.NaturalLess(a, b):
		return -1
	case manifest.NaturalLess(b, a):
		return 1
	}
	return 0
}

// Check confirms that the version is whole, as checkout would write it:
// every chunk a listed member's layout uses is a chunk line of that
// length; every chunk line is a piece of a listed member or the chunk
// file of an array the metadata describes; no path is two members; and
// the members' sizes add up to size (the manifest's). It returns the
// dataset digest (manifest.DatasetDigest) the members give, for the
// caller to compare with the manifest's: computed from IDs, it reads no
// chunk. Memory is a path and an ID per member.
func (ms *Members) Check(size int64) (hashing.ID, error) {
	byPrefix := make(map[string]*zarr.Array, len(ms.arrays))
	for _, a := range ms.arrays {
		byPrefix[zarr.KeyPrefix(a.Path)] = a
	}
	type file struct {
		path string
		size int64
		id   hashing.ID
	}
	files := make([]file, 0, len(ms.listed)+len(ms.chunks))
	used := make(map[hashing.ID]bool)
	ms.once.Do(func() { ms.byID = manifest.NewIDIndex(ms.chunks) })
	for _, m := range ms.listed {
		for _, pc := range m.Layout.All() {
			if pc.Derive != "" {
				return hashing.ID{}, fmt.Errorf("member %s: derived bytes (%s) have no place in a dataset", m.Path, pc.Derive)
			}
			if !pc.Chunk {
				continue
			}
			if at, ok := ms.byID.Find(pc.ID); !ok || ms.chunks[at].Size != pc.Len {
				return hashing.ID{}, fmt.Errorf("member %s uses chunk %s (%d bytes) that the manifest does not list with that size", m.Path, pc.ID, pc.Len)
			}
			used[pc.ID] = true
		}
		files = append(files, file{m.Path, m.Layout.Size, hashing.Sum(m.Layout.Encode())})
	}
	for _, c := range ms.chunks {
		p, ok, err := chunkFile(byPrefix, c.Key)
		switch {
		case err != nil:
			return hashing.ID{}, err
		case ok:
			files = append(files, file{p, c.Size, c.ID})
		case !used[c.ID]:
			return hashing.ID{}, fmt.Errorf("chunk %s (%s) is neither a chunk file nor a piece of a listed member", c.Key, c.ID)
		}
	}
	slices.SortFunc(files, func(a, b file) int { return strings.Compare(a.path, b.path) })
	d := manifest.NewDatasetDigest()
	var total int64
	for i, f := range files {
		if i > 0 && files[i-1].path == f.path {
			return hashing.ID{}, fmt.Errorf("store file %s is two members", f.path)
		}
		if err := d.Add(f.path, f.size, f.id); err != nil {
			return hashing.ID{}, err
		}
		total += f.size
	}
	if total != size {
		return hashing.ID{}, fmt.Errorf("members add up to %d bytes, the manifest says %d", total, size)
	}
	return d.Sum(), nil
}

// Array returns the version's array whose chunks' keys begin with prefix
// (zarr.KeyPrefix of its path), nil when none has it.
func (ms *Members) Array(prefix string) *zarr.Array {
	if a := ms.arrays[prefix]; a != nil && zarr.KeyPrefix(a.Path) == prefix {
		return a
	}
	for _, a := range ms.arrays {
		if zarr.KeyPrefix(a.Path) == prefix {
			return a
		}
	}
	return nil
}
