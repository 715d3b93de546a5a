package repo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"

	"github.com/chunkvc/chunkvc/formats/zarr"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/chunkread"
	"github.com/chunkvc/chunkvc/repo/internal/dataset"
)

// Reading one member of a committed dataset (a Zarr store tracked as one
// unit: docs/DATASETS.md) without writing the store: what serve and cat do.

type (
	// DatasetMembers is the member table of one version of a dataset
	// (dataset.Members): Lookup gives a member path's bytes.
	DatasetMembers = dataset.Members
	// DatasetEntry is one member: its layout, size and ID.
	DatasetEntry = dataset.Entry
)

// ErrNoMember wraps the error for a path that is not a member of a
// dataset's version: a chunk its manifest lacks (the fill value, to a Zarr
// reader), a directory, or no file at all.
var ErrNoMember = dataset.ErrNoMember

// IsDataset reports whether m is the manifest of a dataset.
func IsDataset(m *manifest.Manifest) bool { return m.Format == zarr.Format }

// DatasetMembers reads the member table of dataset manifest m: its layout
// blob, fetched through the read path (verified by its ID) and checked
// against the length m gives, and m's chunk lines, which it keeps.
func (r *Repo) DatasetMembers(ctx context.Context, m *manifest.Manifest) (*DatasetMembers, error) {
	if !IsDataset(m) {
		return nil, fmt.Errorf("%s is a %s file, not a dataset", m.Path, m.Format)
	}
	blob, err := r.datasetLayout(ctx, m)
	if err != nil {
		return nil, err
	}
	ms, err := dataset.Index(blob, m.Chunks)
	if err != nil {
		return nil, fmt.Errorf("%s: layout %s: %w", m.Path, m.Layout, err)
	}
	return ms, nil
}

// datasetLayout returns the layout blob of dataset manifest m, verified.
func (r *Repo) datasetLayout(ctx context.Context, m *manifest.Manifest) ([]byte, error) {
	if err := chunkread.CheckLayoutClaim(m); err != nil {
		return nil, fmt.Errorf("%s: %w", m.Path, err)
	}
	b, _, err := r.read.Get(ctx, m.Layout)
	if err != nil {
		return nil, fmt.Errorf("%s: layout %s: %w", m.Path, m.Layout, err)
	}
	if int64(len(b)) != m.LayoutSize {
		return nil, fmt.Errorf("%s: %w: layout %s has %d bytes, the manifest says %d", m.Path, ErrIntegrity, m.Layout, len(b), m.LayoutSize)
	}
	return b, nil
}

// TrackedAbove returns the nearest path above p (a directory holding it)
// that the commit tracks, and p relative to it; ok is false when none is.
// It reads the commit's listing only, never a manifest: whether that path
// is a dataset is its manifest's Format (IsDataset).
func (s *Snapshot) TrackedAbove(p string) (dir, member string, ok bool, err error) {
	if s.blobs == nil {
		if s.blobs, err = s.r.git.manifestBlobs(s.c); err != nil {
			return "", "", false, err
		}
	}
	for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
		if _, ok := s.blobs[d]; ok {
			return d, p[len(d)+1:], true, nil
		}
	}
	return "", "", false, nil
}

// MemberManifest is a stand-in manifest for member e of dataset manifest
// m, for ChunkReader.OpenLayout: it names the member in errors and lists
// the chunks it uses (for their keys).
func MemberManifest(m *manifest.Manifest, e DatasetEntry) *manifest.Manifest {
	return &manifest.Manifest{Path: m.Path + "/" + e.Path, Format: m.Format, Size: e.Size, Digest: e.ID, Chunks: e.Chunks}
}

// catMember writes member p of the dataset that rev tracks above it, if
// there is one: handled is false when p is in no dataset.
func (r *Repo) catMember(ctx context.Context, rev, p string, w io.Writer) (st AssembleStats, handled bool, err error) {
	s, err := r.Snapshot(rev)
	if err != nil {
		return st, false, err
	}
	dir, member, ok, err := s.TrackedAbove(p)
	if err != nil || !ok {
		return st, false, err
	}
	m, _, err := s.Manifest(dir)
	if err != nil || !IsDataset(m) {
		return st, false, err
	}
	ms, err := r.DatasetMembers(ctx, m)
	if err != nil {
		return st, true, err
	}
	e, err := ms.Lookup(member)
	if err != nil {
		if errors.Is(err, ErrNoMember) {
			err = fmt.Errorf("%s: %w of dataset %s in %s", p, ErrNoMember, dir, revName(rev))
		}
		return st, true, err
	}
	// As Cat does for a file: nothing is written of a member whose
	// chunks are not all stored; each is verified as it is written.
	mm := MemberManifest(m, e)
	if err := r.checkStored(ctx, mm, e.Layout); err != nil {
		return st, true, err
	}
	st, _, err = r.stream(ctx, mm, e.Layout, w, nil, nil, nil)
	return st, true, err
}

// ArrayChunks returns the chunk lines of one array of a dataset at rev
// ("" = HEAD): p is DIR/ARRAY, the dataset's directory and the array's
// path inside the store. The manifest returned is the dataset's.
func (r *Repo) ArrayChunks(ctx context.Context, rev, p string) (*manifest.Manifest, []manifest.Chunk, error) {
	s, err := r.Snapshot(rev)
	if err != nil {
		return nil, nil, err
	}
	dir, arrayPath, ok, err := s.TrackedAbove(p)
	if err != nil {
		return nil, nil, err
	}
	var m *manifest.Manifest
	if ok {
		if m, _, err = s.Manifest(dir); err != nil {
			return nil, nil, err
		}
	}
	if m == nil || !IsDataset(m) {
		return nil, nil, fmt.Errorf("%s is %w in %s, nor an array of a tracked dataset", p, ErrNotTracked, revName(rev))
	}
	ms, err := r.DatasetMembers(ctx, m)
	if err != nil {
		return nil, nil, err
	}
	if !ms.HasArray(arrayPath) {
		return nil, nil, fmt.Errorf("%s: dataset %s has no array %q in %s", p, dir, arrayPath, revName(rev))
	}
	return m, dataset.ArrayChunks(m.Chunks, arrayPath), nil
}
