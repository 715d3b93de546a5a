package gitdb

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// Stage writes blobs for files (work-tree-relative slash path → content)
// and records them in the index as regular files, removing the paths in
// remove. It is `git add` for files whose content the caller holds in
// memory. The index is replaced under index.lock (ErrGitLocked while a
// git holds it).
func (g *Repo) Stage(files map[string][]byte, remove []string) error {
	blobs, err := g.writeBlobs(files)
	if err != nil {
		return err
	}
	idx, err := g.index()
	if err != nil {
		return fmt.Errorf("read git index: %w", err)
	}
	stageInto(idx, blobs, remove)
	if err := g.setIndex(idx); err != nil {
		return fmt.Errorf("write git index: %w", err)
	}
	return nil
}

// writeBlobs writes each file's blob.
func (g *Repo) writeBlobs(files map[string][]byte) (map[string]Blob, error) {
	blobs := make(map[string]Blob, len(files))
	for p, data := range files {
		b, err := g.writeBlob(data)
		if err != nil {
			return nil, fmt.Errorf("write git object for %s: %w", p, err)
		}
		blobs[p] = b
	}
	return blobs, nil
}

// stageInto records blobs (already written) in idx and removes the paths
// in remove. It looks entries up in a map: go-git's Index.Entry and Remove
// scan every entry, which made a commit of 20,000 files quadratic.
func stageInto(idx *index.Index, files map[string]Blob, remove []string) {
	entry := entryFinder(idx.Entries)
	var added map[string]*index.Entry
	for _, p := range slices.Sorted(maps.Keys(files)) {
		b := files[p]
		e := entry(p)
		if e == nil {
			e = added[p]
		}
		if e == nil {
			e = idx.Add(p)
			if added == nil {
				added = map[string]*index.Entry{}
			}
			added[p] = e
		}
		*e = index.Entry{Name: p, Hash: plumbing.Hash(b.Hash), Mode: filemode.Regular, Size: uint32(b.Size)}
	}
	if len(remove) > 0 {
		drop := make(map[string]bool, len(remove))
		for _, p := range remove {
			drop[p] = true
		}
		idx.Entries = slices.DeleteFunc(idx.Entries, func(e *index.Entry) bool { return drop[e.Name] })
	}
}

// entryFinder returns a function that finds the first entry of es named
// p: by binary search when es is in name order (as git writes the
// index), else through a map of every name.
func entryFinder(es []*index.Entry) func(p string) *index.Entry {
	if slices.IsSortedFunc(es, byEntryName) {
		return func(p string) *index.Entry {
			i, ok := slices.BinarySearchFunc(es, p, func(e *index.Entry, p string) int { return strings.Compare(e.Name, p) })
			if !ok {
				return nil
			}
			return es[i]
		}
	}
	byName := make(map[string]*index.Entry, len(es))
	for _, e := range es {
		if _, ok := byName[e.Name]; !ok {
			byName[e.Name] = e
		}
	}
	return func(p string) *index.Entry { return byName[p] }
}

// Settle says which index entries a commit speaks for: those of the paths
// Scope accepts become what HEAD holds (Head) unless the commit writes or
// removes them. A commit killed between moving its branch and writing the
// index, or made by an older chunkvc, left entries staged that no commit
// made, and these must not ride along.
type Settle struct {
	// Head holds, folder by folder, every path HEAD has that Scope may
	// accept, with its blob.
	Head []HeadFiles
	// Scope reports whether the commit speaks for the entry at path; nil
	// settles nothing.
	Scope func(path string) bool
}

// HeadFiles is what HEAD holds under a folder (a slash path): ListFiles's
// list of it, by path below Dir in byte order.
type HeadFiles struct {
	Dir   string
	Files []TreeEntry
}

// find returns HEAD's blob of path p, if s holds it.
func (s Settle) find(p string) (Hash, bool) {
	for _, d := range s.Head {
		if len(p) > len(d.Dir) && p[len(d.Dir)] == '/' && strings.HasPrefix(p, d.Dir) {
			sub := p[len(d.Dir)+1:]
			if i, ok := slices.BinarySearchFunc(d.Files, sub, func(e TreeEntry, p string) int { return strings.Compare(e.Path, p) }); ok {
				return d.Files[i].Hash, true
			}
		}
	}
	return ZeroHash, false
}

// Commit stages files (blobs already written) and removals and makes a
// commit of the whole index, the way `git commit` does: index.lock is held
// throughout, the branch moves first (see commitIndex), and only then is
// the new index renamed into place, so a commit killed before the branch
// moved leaves the index as it was. The entries s speaks for are settled
// first. The author and committer are the user git names (environment,
// then config). It returns ErrNothingToCommit when the tree would not
// change, ErrUnmerged for an index with conflicts, and ErrGitLocked when a
// git holds index.lock.
func (g *Repo) Commit(msg string, files map[string]Blob, remove []string, s Settle) (Hash, error) {
	m, err := g.CommitListing(msg, files, remove, s)
	return m.Hash, err
}

// Made is a commit CommitListing made: its hash, its tree's, and the
// files its tree holds under each folder it was asked to list.
type Made struct {
	Hash, Tree Hash
	// Lists holds, for each folder asked for, what ListFiles gives for
	// it: the files under it, by path below it, in byte order.
	Lists [][]TreeEntry
}

// CommitListing is Commit, which also returns what the new tree holds
// under each of dirs (slash paths), from the index the tree was written
// from: no tree is read back.
func (g *Repo) CommitListing(msg string, files map[string]Blob, remove []string, s Settle, dirs ...string) (Made, error) {
	author, committer, err := g.signature()
	if err != nil {
		return Made{}, err
	}
	lk, err := g.lockIndex()
	if err != nil {
		return Made{}, err
	}
	defer lk.abort()
	idx, err := g.index()
	if err != nil {
		return Made{}, fmt.Errorf("read git index: %w", err)
	}
	if err := g.settle(idx, files, remove, s); err != nil {
		return Made{}, err
	}
	stageInto(idx, files, remove)
	m, es, err := g.commitIndex(idx, msg, author, committer)
	if errors.Is(err, ErrNothingToCommit) {
		return Made{}, err
	}
	if err != nil {
		return Made{}, fmt.Errorf("git commit: %w", err)
	}
	for _, d := range dirs {
		m.Lists = append(m.Lists, filesUnder(es, d))
	}
	if err := lk.commit(idx); err != nil {
		return m, fmt.Errorf("commit %s made, but writing the git index failed (git reset rebuilds it): %w", m.Hash, err)
	}
	return m, nil
}

// filesUnder returns the files (as a tree lists them: not a submodule)
// of es, index entries sorted by name, under folder dir, by path below it.
func filesUnder(es []*index.Entry, dir string) []TreeEntry {
	prefix := dir + "/"
	byName := func(e *index.Entry, p string) int { return strings.Compare(e.Name, p) }
	i, _ := slices.BinarySearchFunc(es, prefix, byName)
	end, _ := slices.BinarySearchFunc(es, dir+"0", byName) // '0' follows '/'
	out := make([]TreeEntry, 0, end-i)
	for _, e := range es[i:end] {
		if kindOf(uint32(e.Mode)) == kindFile {
			out = append(out, TreeEntry{e.Name[len(prefix):], Hash(e.Hash)})
		}
	}
	return out
}

// settle sets the index entries in s's scope that files and remove do
// not change to HEAD's blobs, adds those of HEAD's the index lacks, and
// drops those HEAD does not have.
func (g *Repo) settle(idx *index.Index, files map[string]Blob, remove []string, s Settle) error {
	if s.Scope == nil {
		return nil
	}
	gone := make(map[string]bool, len(remove))
	for _, p := range remove {
		gone[p] = true
	}
	var errs []error
	idx.Entries = slices.DeleteFunc(idx.Entries, func(e *index.Entry) bool {
		p := e.Name
		if !s.Scope(p) || gone[p] || e.Stage != 0 {
			return false
		}
		if _, ok := files[p]; ok {
			return false
		}
		h, ok := s.find(p)
		if !ok {
			return true // staged by a commit that was never made
		}
		if e.Hash != plumbing.Hash(h) {
			size, err := g.blobSize(h)
			if err != nil {
				errs = append(errs, fmt.Errorf("manifest %s: %w", p, err))
				return false
			}
			*e = index.Entry{Name: p, Hash: plumbing.Hash(h), Mode: filemode.Regular, Size: uint32(size)}
		}
		return false
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// And HEAD's entries the index lacks: a commit killed after it moved
	// the branch and before it wrote the index left the one before.
	for _, d := range s.Head {
		for _, f := range missing(idx.Entries, d) {
			p := d.Dir + "/" + f.Path
			if gone[p] || !s.Scope(p) {
				continue
			}
			if _, ok := files[p]; ok {
				continue
			}
			size, err := g.blobSize(f.Hash)
			if err != nil {
				return fmt.Errorf("manifest %s: %w", p, err)
			}
			e := idx.Add(p)
			*e = index.Entry{Name: p, Hash: plumbing.Hash(f.Hash), Mode: filemode.Regular, Size: uint32(size)}
		}
	}
	return nil
}

// missing returns the files of d that no entry of es has. es in name order
// (as git writes the index) is walked beside d's files; otherwise its
// names are put in a set.
func missing(es []*index.Entry, d HeadFiles) []TreeEntry {
	var out []TreeEntry
	prefix := d.Dir + "/"
	if !slices.IsSortedFunc(es, byEntryName) {
		in := make(map[string]bool, len(es))
		for _, e := range es {
			in[e.Name] = true
		}
		for _, f := range d.Files {
			if !in[prefix+f.Path] {
				out = append(out, f)
			}
		}
		return out
	}
	byName := func(e *index.Entry, p string) int { return strings.Compare(e.Name, p) }
	i, _ := slices.BinarySearchFunc(es, prefix, byName)
	end, _ := slices.BinarySearchFunc(es, d.Dir+"0", byName) // '0' follows '/'
	for _, f := range d.Files {
		for i < end && es[i].Name[len(prefix):] < f.Path {
			i++
		}
		if i == end || es[i].Name[len(prefix):] != f.Path {
			out = append(out, f)
		}
	}
	return out
}
