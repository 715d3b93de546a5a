package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path"

	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo"
)

// Bounds of the decoded datasets a Server keeps: a dataset's member table
// holds its chunk lines (about 100 bytes each), so a million-chunk store
// costs ~100 MB, decoded once per (commit, dataset), not per request.
const (
	maxCachedSets   = 8
	maxCachedChunks = 2_000_000
)

// datasetCache keeps the member tables of recently read dataset versions,
// oldest dropped first past maxCachedSets or maxCachedChunks. Not safe for
// concurrent use: the Server holds gitMu.
type datasetCache struct {
	order  []setKey
	sets   map[setKey]*cachedSet
	chunks int
}

type setKey struct{ commit, dir string }

type cachedSet struct {
	m      *manifest.Manifest // without its chunk lines (members has them)
	ms     *repo.DatasetMembers
	chunks int
}

func (c *datasetCache) get(k setKey) *cachedSet { return c.sets[k] }

func (c *datasetCache) put(k setKey, cs *cachedSet) {
	if c.sets == nil {
		c.sets = map[setKey]*cachedSet{}
	}
	for len(c.order) > 0 && (len(c.order) >= maxCachedSets || c.chunks+cs.chunks > maxCachedChunks) {
		old := c.order[0]
		c.order = c.order[1:]
		c.chunks -= c.sets[old].chunks
		delete(c.sets, old)
	}
	c.order = append(c.order, k)
	c.sets[k] = cs
	c.chunks += cs.chunks
}

// member resolves p, a path of snapshot snap, as a member of the dataset
// tracked above it. found is false when no dataset is above p; a path in
// a dataset that is no member of it (a chunk its manifest lacks: the fill
// value to a Zarr reader) is found, with 404. The caller holds gitMu.
func (s *Server) member(ctx context.Context, snap *repo.Snapshot, p string) (t target, found bool, code int, err error) {
	dir, member, ok, err := snap.TrackedAbove(p)
	if err != nil {
		return target{}, true, http.StatusInternalServerError, err
	}
	if !ok {
		return target{}, false, 0, nil
	}
	k := setKey{snap.Commit(), dir}
	cs := s.sets.get(k)
	if cs == nil {
		m, _, err := snap.Manifest(dir)
		if err != nil {
			return target{}, true, http.StatusInternalServerError, err
		}
		if !repo.IsDataset(m) {
			return target{}, false, 0, nil // a file, with nothing under it
		}
		ms, err := s.r.DatasetMembers(ctx, m)
		if err != nil {
			return target{}, true, errorStatus(err), err
		}
		slim := *m
		slim.Chunks = nil
		cs = &cachedSet{m: &slim, ms: ms, chunks: len(m.Chunks)}
		s.sets.put(k, cs)
	}
	e, err := cs.ms.Lookup(member)
	if errors.Is(err, repo.ErrNoMember) {
		return target{}, true, http.StatusNotFound, fmt.Errorf("not found: %s in dataset %s", err, dir)
	}
	if err != nil {
		return target{}, true, http.StatusInternalServerError, err
	}
	return target{m: repo.MemberManifest(cs.m, e), lay: e.Layout, mediaType: memberType(e)}, true, 0, nil
}

// memberType is the media type of a dataset member: JSON for Zarr's
// metadata documents, bytes otherwise.
func memberType(e repo.DatasetEntry) string {
	switch path.Base(e.Path) {
	case ".zarray", ".zattrs", ".zgroup", ".zmetadata", "zarr.json":
		if e.Key == "" {
			return "application/json"
		}
	}
	return "application/octet-stream"
}
