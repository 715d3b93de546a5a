package repo

import (
	"fmt"

	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
)

// Snapshot is the set of files tracked at one commit. Its first Manifest
// call lists them (a walk of the commit's manifest tree); later calls look
// them up, so a caller reading many files of one commit keeps the
// Snapshot. Snapshots, like Repo.Snapshot, read Git objects in ways that
// are not safe for concurrent use: a caller that uses them from many
// goroutines serializes those calls.
type Snapshot struct {
	r     *Repo
	c     *gitdb.Commit
	blobs map[string]gitdb.Hash // nil until the first Manifest
}

// Snapshot resolves rev ("" = HEAD): a branch, tag, commit id or other
// revision such as HEAD~2. An unknown rev is an error, and so is HEAD on
// a branch with no commit (ErrNoCommits).
func (r *Repo) Snapshot(rev string) (*Snapshot, error) {
	c, err := r.git.Resolve(rev)
	if err != nil {
		return nil, err
	}
	return &Snapshot{r: r, c: c}, nil
}

// Commit is the commit's full hexadecimal id.
func (s *Snapshot) Commit() string { return s.c.Hash.String() }

// Manifest returns the manifest of tracked file p (a slash-separated path
// relative to the work tree root), decoded and checked to describe p. ok
// is false when the commit tracks no file p; an error means the commit's
// tree or p's manifest could not be read, or the manifest is invalid
// (errors.Is manifest.ErrInvalid).
func (s *Snapshot) Manifest(p string) (m *manifest.Manifest, ok bool, err error) {
	if s.blobs == nil {
		if s.blobs, err = s.r.git.manifestBlobs(s.c); err != nil {
			return nil, false, err
		}
	}
	h, ok := s.blobs[p]
	if !ok {
		return nil, false, nil
	}
	m, _, err = s.r.git.readManifestBlob(h, p)
	if err != nil {
		return nil, false, err
	}
	return m, true, nil
}

// GitFile returns the bytes of p as the commit's Git tree holds it (a
// file Git tracks, not chunkvc: a lake's _manifest.json, a README) and
// its blob id; ok is false when the tree has no regular file p. Files
// over limit bytes are an error.
func (s *Snapshot) GitFile(p string, limit int64) (data []byte, blob string, ok bool, err error) {
	h, ok, err := s.r.git.FileAt(s.c.TreeHash, p)
	if err != nil || !ok {
		return nil, "", false, err
	}
	if data, err = s.r.git.ReadBlob(h, limit); err != nil {
		return nil, "", false, fmt.Errorf("%s at %.12s: %w", p, s.c.Hash, err)
	}
	return data, h.String(), true, nil
}
