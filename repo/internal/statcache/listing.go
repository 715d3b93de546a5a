package statcache

import (
	"encoding/binary"
	"slices"
	"strings"
	"unsafe"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/repo/internal/confine"
	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
)

// A listing is what a Git tree holds under some folders: the files under
// each, by slash path below the folder, sorted in byte order, with their
// blobs. It is kept beside the stat cache, for one tree at a time, so that
// status and commit do not inflate every tree object of HEAD's manifest
// folders to learn what HEAD holds: a tree's hash names its contents, so
// a listing saved for that hash is right for as long as the file is whole.
//
// # File format
//
// .git/chunkvc/listing; uvarint is encoding/binary's unsigned varint.
//
//	magic     "chunkvc-listing 1\n"
//	tree      20 bytes                          the tree listed
//	lists     uvarint                           number of folders
//	each folder:
//	  dir     uvarint length, then the bytes    the folder (slash path)
//	  count   uvarint
//	  files   count times, in strictly increasing byte order of path:
//	    path  uvarint length, then the bytes    below dir, not empty
//	    blob  20 bytes
//	checksum  32 bytes                          BLAKE3 of everything above
//
// Anything else (another tree, other folders, a wrong checksum, a field
// that does not parse, paths out of order, bytes left over) is no listing.
const (
	listingRel   = "chunkvc/listing"
	listingMagic = "chunkvc-listing 1\n"
)

// LoadListing returns the files under each of dirs in tree, as SaveListing
// saved them for that tree and those folders; false if it did not, or the
// file is not whole. Paths share the file's bytes.
func LoadListing(git *confine.Tree, tree gitdb.Hash, dirs []string) ([][]gitdb.TreeEntry, bool) {
	defer git.Close()
	data, err := git.ReadFile(listingRel, confine.NoLimit)
	if err != nil {
		return nil, false
	}
	got, lists, ok := decodeListing(data)
	if !ok || got != tree || len(lists) != len(dirs) {
		return nil, false
	}
	out := make([][]gitdb.TreeEntry, len(dirs))
	for i, l := range lists {
		if l.dir != dirs[i] {
			return nil, false
		}
		out[i] = l.files
	}
	return out, true
}

// SaveListing saves files, the files under each of dirs in tree (sorted
// here if they are not), as LoadListing reads them. Callers may ignore its
// error: a listing not saved costs the next command reading the tree.
func SaveListing(git *confine.Tree, tree gitdb.Hash, dirs []string, files [][]gitdb.TreeEntry) error {
	lists := make([]listed, len(dirs))
	for i, d := range dirs {
		lists[i] = listed{d, files[i]}
	}
	defer git.Close()
	return git.WriteFile(listingRel, encodeListing(tree, lists), false)
}

// listed is one folder of a listing.
type listed struct {
	dir   string
	files []gitdb.TreeEntry
}

func byPath(a, b gitdb.TreeEntry) int { return strings.Compare(a.Path, b.Path) }

// encodeListing returns the listing file of tree's lists (see
// LoadListing); a list not sorted by path is sorted in a copy.
func encodeListing(tree gitdb.Hash, lists []listed) []byte {
	size := len(listingMagic) + len(tree) + binary.MaxVarintLen64 + idLen
	for _, l := range lists {
		size += 2*binary.MaxVarintLen64 + len(l.dir)
		for _, f := range l.files {
			size += binary.MaxVarintLen64 + len(f.Path) + len(f.Hash)
		}
	}
	b := make([]byte, 0, size)
	b = append(b, listingMagic...)
	b = append(b, tree[:]...)
	b = binary.AppendUvarint(b, uint64(len(lists)))
	for _, l := range lists {
		files := l.files
		if !slices.IsSortedFunc(files, byPath) {
			files = slices.SortedFunc(slices.Values(files), byPath)
		}
		b = binary.AppendUvarint(b, uint64(len(l.dir)))
		b = append(b, l.dir...)
		b = binary.AppendUvarint(b, uint64(len(files)))
		for i, f := range files {
			if i > 0 && f.Path == files[i-1].Path {
				continue // a tree names a path once; keep the file canonical
			}
			b = binary.AppendUvarint(b, uint64(len(f.Path)))
			b = append(b, f.Path...)
			b = append(b, f.Hash[:]...)
		}
	}
	sum := hashing.Sum(b)
	return append(b, sum[:]...)
}

// decodeListing returns the tree and lists of a listing file; false if it
// is not one, whole and in order. The paths share b, which must not
// change after.
func decodeListing(b []byte) (gitdb.Hash, []listed, bool) {
	var tree gitdb.Hash
	if len(b) < len(listingMagic)+len(tree)+idLen || string(b[:len(listingMagic)]) != listingMagic {
		return tree, nil, false
	}
	body := b[:len(b)-idLen]
	if hashing.ID(b[len(body):]) != hashing.Sum(body) {
		return tree, nil, false
	}
	s := unsafe.String(unsafe.SliceData(body), len(body))
	d := decoder{s: s, pos: len(listingMagic)}
	copy(tree[:], d.str(uint64(len(tree))))
	n := d.uvarint()
	if n > uint64(len(s)) {
		return tree, nil, false
	}
	lists := make([]listed, 0, n)
	for range n {
		l := listed{dir: d.str(d.uvarint())}
		count := d.uvarint()
		if d.bad || count > uint64(len(s)-d.pos)/(1+1+uint64(len(gitdb.Hash{}))) {
			return tree, nil, false // every file takes at least 22 bytes
		}
		l.files = make([]gitdb.TreeEntry, count)
		for i := range l.files {
			f := &l.files[i]
			f.Path = d.str(d.uvarint())
			copy(f.Hash[:], d.str(uint64(len(f.Hash))))
			if d.bad || f.Path == "" || i > 0 && f.Path <= l.files[i-1].Path {
				return tree, nil, false
			}
		}
		lists = append(lists, l)
	}
	if d.bad || d.pos != len(s) {
		return tree, nil, false
	}
	return tree, lists, true
}
