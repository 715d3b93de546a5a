package gitdb

import (
	"errors"
	"fmt"
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
	byName := make(map[string]*index.Entry, len(idx.Entries))
	for _, e := range idx.Entries {
		if _, ok := byName[e.Name]; !ok {
			byName[e.Name] = e
		}
	}
	for p, b := range files {
		e := byName[p]
		if e == nil {
			e = idx.Add(p)
			byName[p] = e
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

// Settle says which index entries a commit speaks for: those of the paths
// Scope accepts become what HEAD holds (Head) unless the commit writes or
// removes them. A commit killed between moving its branch and writing the
// index, or made by an older chunkvc, left entries staged that no commit
// made, and these must not ride along.
type Settle struct {
	Head map[string]Hash // path → HEAD's blob, for every path HEAD has that Scope may accept
	// Scope reports whether the commit speaks for the entry at path; nil
	// settles nothing.
	Scope func(path string) bool
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
	sig, err := g.signature()
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
	m, es, err := g.commitIndex(idx, msg, sig)
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
		h, ok := s.Head[p]
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
	in := make(map[string]bool, len(idx.Entries))
	for _, e := range idx.Entries {
		in[e.Name] = true
	}
	for p, h := range s.Head {
		if in[p] || gone[p] || !s.Scope(p) {
			continue
		}
		if _, ok := files[p]; ok {
			continue
		}
		size, err := g.blobSize(h)
		if err != nil {
			return fmt.Errorf("manifest %s: %w", p, err)
		}
		e := idx.Add(p)
		*e = index.Entry{Name: p, Hash: plumbing.Hash(h), Mode: filemode.Regular, Size: uint32(size)}
	}
	return nil
}
