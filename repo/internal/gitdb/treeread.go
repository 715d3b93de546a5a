package gitdb

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// Tree entry kinds, from a mode's type bits as git and go-git read them
// (so 100664, an old spelling, is a file): a folder, a file (regular,
// executable or symbolic link, its blob holding the target), or anything
// else (a submodule's commit).
const (
	kindOther = iota
	kindTree
	kindFile
)

// kindOf classifies an entry's mode.
func kindOf(mode uint32) int {
	switch mode & 0o170000 {
	case 0o040000:
		return kindTree
	case 0o100000, 0o120000:
		return kindFile
	}
	return kindOther
}

// errNoDir is the folder a listing asked for missing from the tree.
var errNoDir = errors.New("no such folder")

// TreeEntry is a file of a tree listing: its slash path under the folder
// listed and its blob.
type TreeEntry struct {
	Path string
	Hash Hash
}

// listFiles returns the files (regular, executable, symbolic link) under
// folder dir (a slash path, "" for the root) of tree root, with their
// paths under dir, a tree's files at a time; errNoDir if the tree has no
// such folder. Tree objects are parsed here rather than by go-git's
// walker, which allocates per entry and per path far more than listing
// 20,000 manifests needs.
func (g *Repo) listFiles(root Hash, dir string) ([][]TreeEntry, error) {
	t := g.newTreeReader()
	h := root
	for name := range strings.SplitSeq(dir, "/") {
		if name == "" {
			continue
		}
		buf, err := t.read(h)
		if err != nil {
			return nil, err
		}
		found, isTree := false, false
		err = parseTree(buf, func(mode uint32, n []byte, eh Hash) bool {
			if string(n) == name {
				h, found, isTree = eh, true, kindOf(mode) == kindTree
				return false
			}
			return true
		})
		switch {
		case err != nil:
			return nil, fmt.Errorf("tree %s: %w", h, err)
		case !found:
			return nil, errNoDir
		case !isTree:
			return nil, fmt.Errorf("%s is not a folder", name)
		}
	}
	return t.listUnder(h, "", nil)
}

// minTreeEntry is the shortest entry a tree object holds: a 5-digit mode,
// a space, a 1-byte name, its NUL and a hash.
const minTreeEntry = 5 + 1 + 1 + 1 + len(Hash{})

// listUnder appends the files of tree h and of the trees under it, their
// paths prefixed with prefix, to out, a tree's files at a time. A tree's
// paths share one string.
func (t *treeReader) listUnder(h Hash, prefix string, out [][]TreeEntry) ([][]TreeEntry, error) {
	buf, err := t.read(h)
	if err != nil {
		return nil, err
	}
	type span struct {
		start, end int
		h          Hash
	}
	most := len(buf)/minTreeEntry + 1
	files := make([]span, 0, most)
	var subs []span
	names := make([]byte, 0, len(buf)+most*len(prefix))
	err = parseTree(buf, func(mode uint32, n []byte, eh Hash) bool {
		switch kindOf(mode) {
		case kindTree:
			start := len(names)
			names = append(append(append(names, prefix...), n...), '/')
			subs = append(subs, span{start, len(names), eh})
		case kindFile:
			start := len(names)
			names = append(append(names, prefix...), n...)
			files = append(files, span{start, len(names), eh})
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("tree %s: %w", h, err)
	}
	all := string(names)
	if len(files) > 0 {
		list := make([]TreeEntry, len(files))
		for i, f := range files {
			list[i] = TreeEntry{all[f.start:f.end], f.h}
		}
		out = append(out, list)
	}
	for _, s := range subs {
		if out, err = t.listUnder(s.h, all[s.start:s.end], out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// treeReader reads tree objects, loose ones itself (go-git's reader
// copies each object into memory of its own first), one buffer reused.
type treeReader struct {
	g       *Repo
	objects string // the objects folder, "" if not on disk
	buf     []byte
	br      *bufio.Reader
	zr      io.ReadCloser // zlib, reset for each object
}

func (g *Repo) newTreeReader() *treeReader {
	t := &treeReader{g: g}
	t.objects, _ = g.objectsDir()
	return t
}

// read returns the bytes of tree object h, valid until the next read.
func (t *treeReader) read(h Hash) ([]byte, error) {
	if t.objects != "" {
		b, err := t.readLoose(h)
		if err == nil {
			return b, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("tree %s: %w", h, err)
		}
	}
	t.g.mu.Lock()
	defer t.g.mu.Unlock()
	obj, err := t.g.r.Storer.EncodedObject(plumbing.TreeObject, plumbing.Hash(h))
	if err != nil {
		return nil, fmt.Errorf("tree %s: %w", h, err)
	}
	rd, err := obj.Reader()
	if err != nil {
		return nil, fmt.Errorf("tree %s: %w", h, err)
	}
	defer rd.Close()
	if err := t.fill(rd, obj.Size()); err != nil {
		return nil, fmt.Errorf("tree %s: %w", h, err)
	}
	return t.buf, nil
}

// readLoose reads the loose object h, which must be a tree:
// zlib("tree <decimal size>\x00" | bytes). No such file is fs.ErrNotExist.
func (t *treeReader) readLoose(h Hash) ([]byte, error) {
	f, err := os.Open(looseObject(t.objects, h))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if t.br == nil {
		t.br = bufio.NewReaderSize(f, 32<<10)
	} else {
		t.br.Reset(f)
	}
	if t.zr == nil {
		if t.zr, err = zlib.NewReader(t.br); err != nil {
			return nil, err
		}
	} else if err := t.zr.(zlib.Resetter).Reset(t.br, nil); err != nil {
		return nil, err
	}
	var hdr [32]byte
	n := 0
	for ; n < len(hdr); n++ {
		if _, err := io.ReadFull(t.zr, hdr[n:n+1]); err != nil {
			return nil, fmt.Errorf("loose object header: %w", err)
		}
		if hdr[n] == 0 {
			break
		}
	}
	size, ok := strings.CutPrefix(string(hdr[:min(n, len(hdr))]), "tree ")
	if !ok || n == len(hdr) {
		return nil, errors.New("loose object is not a tree")
	}
	sz, err := strconv.ParseInt(size, 10, 64)
	if err != nil || strconv.FormatInt(sz, 10) != size {
		return nil, fmt.Errorf("loose object header: size %q", size)
	}
	if err := t.fill(t.zr, sz); err != nil {
		return nil, err
	}
	// The end of the stream, where zlib checks its checksum.
	if k, err := t.zr.Read(hdr[:1]); k != 0 || err != io.EOF {
		return nil, errors.New("loose object longer than its header says, or damaged")
	}
	return t.buf, nil
}

// fill reads the n bytes of a tree object from rd into t.buf.
func (t *treeReader) fill(rd io.Reader, n int64) error {
	if n < 0 || n > maxTree {
		return fmt.Errorf("%d bytes is not a tree chunkvc reads", n)
	}
	if int64(cap(t.buf)) < n {
		t.buf = make([]byte, n)
	}
	t.buf = t.buf[:n]
	_, err := io.ReadFull(rd, t.buf)
	return err
}

// maxTree bounds a tree object's size: a million entries of long names.
const maxTree = 1 << 30

// parseTree calls each for every entry of tree object b, in order, until
// it returns false: "<octal mode> <name>\x00<20-byte hash>" each. An entry
// that does not parse is an error.
func parseTree(b []byte, each func(mode uint32, name []byte, h Hash) bool) error {
	for len(b) > 0 {
		sp := bytes.IndexByte(b, ' ')
		if sp <= 0 {
			return errors.New("entry without a mode")
		}
		var mode uint64
		for _, c := range b[:sp] {
			if c < '0' || c > '7' || mode > math.MaxUint32>>3 {
				return fmt.Errorf("mode %q is not a 32-bit octal number", b[:sp])
			}
			mode = mode<<3 | uint64(c-'0')
		}
		b = b[sp+1:]
		nul := bytes.IndexByte(b, 0)
		if nul <= 0 || len(b) < nul+1+len(Hash{}) {
			return errors.New("entry cut short")
		}
		name := b[:nul]
		var h Hash
		copy(h[:], b[nul+1:])
		b = b[nul+1+len(h):]
		if !each(uint32(mode), name, h) {
			return nil
		}
	}
	return nil
}

// FileAt finds the regular file at slash-separated path p in tree root:
// its blob, and ok false when no such file is there (a folder, a symbolic
// link or a submodule at p is not a file either).
func (g *Repo) FileAt(root Hash, p string) (h Hash, ok bool, err error) {
	t := g.newTreeReader()
	h = root
	names := strings.Split(p, "/")
	for i, name := range names {
		buf, err := t.read(h)
		if err != nil {
			return Hash{}, false, err
		}
		var mode uint32
		found := false
		err = parseTree(buf, func(m uint32, n []byte, eh Hash) bool {
			if string(n) == name {
				h, mode, found = eh, m, true
				return false
			}
			return true
		})
		switch {
		case err != nil:
			return Hash{}, false, fmt.Errorf("tree %s: %w", h, err)
		case !found:
			return Hash{}, false, nil
		case i < len(names)-1 && kindOf(mode) != kindTree:
			return Hash{}, false, nil
		case i == len(names)-1 && mode&0o170000 != 0o100000:
			return Hash{}, false, nil
		}
	}
	return h, true, nil
}
