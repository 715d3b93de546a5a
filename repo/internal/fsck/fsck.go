package fsck

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/internal/progress"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
	"github.com/chunkvc/chunkvc/repo/internal/reach"
	"github.com/chunkvc/chunkvc/store"
)

// Problem is one thing fsck found wrong.
type Problem struct {
	Commit string `json:"commit,omitempty"`
	Path   string `json:"path,omitempty"`
	Key    string `json:"key,omitempty"`
	Hash   string `json:"hash,omitempty"`
	Error  string `json:"error"`
}

// Result reports a check.
type Result struct {
	Commits int `json:"commits"`
	// Expired counts the commits an expiry record (gc --expire) names:
	// their chunks were deleted on purpose, so their manifests are not
	// checked against the store.
	Expired   int       `json:"expired"`
	Manifests int       `json:"manifests"`
	Chunks    int       `json:"chunks"`
	Bytes     int64     `json:"bytes"`
	Repaired  int       `json:"repaired"`
	Problems  []Problem `json:"problems"`
}

// Options configures a check.
type Options struct {
	Full bool // read back and re-hash every chunk
	// Remote requires every chunk in the configured store; otherwise a
	// chunk kept only in the embedded store (commit --offline, not yet
	// pushed) counts as present.
	Remote bool
	// Repair replaces a missing or corrupt object of the configured store
	// with a verified copy from another store this repository can read
	// (the embedded store, alternates, the read cache).
	Repair   bool
	Progress progress.Counter
}

// Git is what fsck reads of a repository's Git.
type Git interface {
	reach.Manifests
	Reachable() ([]*gitdb.Commit, error)
}

// Env is the repository a check reads.
type Env struct {
	Git   Git
	Store store.Store // the configured store
	Local store.Store // the embedded store (Store itself when it is the configured one)
	// Copies are the other stores Repair may copy an object from.
	Copies []store.Store
	// LayoutOf reads m's layout.
	LayoutOf func(ctx context.Context, m *manifest.Manifest) (*manifest.Layout, error)
	// VerifyDigest assembles m from lay without writing it anywhere and
	// compares the whole-file digest; it passes over missing or corrupt
	// chunks, which the chunk check reports with their keys.
	VerifyDigest func(ctx context.Context, m *manifest.Manifest, lay *manifest.Layout) error
	// Dataset reads the layout blob of m when m is a dataset's manifest
	// (isDataset false, and nothing read, otherwise), checks its member
	// table against m's chunk lines and size, and returns the dataset
	// digest the members give (manifest.DatasetDigest).
	Dataset func(ctx context.Context, m *manifest.Manifest) (digest hashing.ID, isDataset bool, err error)
	// Expired reports whether gc --expire deleted commit c's chunks on
	// purpose; nil: none was.
	Expired func(c *gitdb.Commit) (bool, error)
}

// Run checks every manifest reachable from any ref of env.Git.
func Run(ctx context.Context, env Env, opt Options) (*Result, error) {
	j := &job{env: env, opt: opt, res: &Result{Problems: []Problem{}},
		chunks: map[hashing.ID]user{}, sizes: map[hashing.ID]int64{}}
	commits, err := env.Git.Reachable()
	if err != nil {
		return nil, err
	}
	j.res.Commits = len(commits)
	seenBlob := map[gitdb.Hash]bool{}
	for _, c := range commits {
		if env.Expired != nil {
			gone, err := env.Expired(c)
			if err != nil {
				return nil, err
			}
			if gone {
				j.res.Expired++
				continue
			}
		}
		if err := j.checkCommit(ctx, c, seenBlob); err != nil {
			return nil, err
		}
	}
	if err := j.verifyChunks(ctx, progress.OrNoop(opt.Progress)); err != nil {
		return nil, err
	}
	return j.res, nil
}

// job is one check: checkCommit and checkManifest check the manifests
// and gather the chunks they use, verifyChunks checks those in the store.
type job struct {
	env    Env
	opt    Options
	res    *Result
	chunks map[hashing.ID]user // each chunk's first user, for problems
	sizes  map[hashing.ID]int64
}

// user names where fsck met a chunk first.
type user struct{ commit, path, key string }

// checkCommit checks the manifests of commit c not seen before (by blob).
// Problems go into the result; the error is one that stops fsck.
func (j *job) checkCommit(ctx context.Context, c *gitdb.Commit, seenBlob map[gitdb.Hash]bool) error {
	blobs, err := j.env.Git.Manifests(c)
	if err != nil {
		j.res.Problems = append(j.res.Problems, Problem{Commit: c.Hash.String(), Error: err.Error()})
		return nil
	}
	paths := make([]string, 0, len(blobs))
	for p := range blobs {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		h := blobs[p]
		if seenBlob[h] {
			continue
		}
		seenBlob[h] = true
		j.res.Manifests++
		if err := j.checkManifest(ctx, c, p, h); err != nil {
			return err
		}
	}
	return nil
}

// checkManifest checks the manifest of p in commit c, blob h: it decodes,
// its layout agrees with it (and is in the configured store, with Remote),
// and with Full its chunks rebuild its digest. Then its chunks are
// gathered for verifyChunks.
func (j *job) checkManifest(ctx context.Context, c *gitdb.Commit, p string, h gitdb.Hash) error {
	bad := func(key, hash string, err error) {
		j.res.Problems = append(j.res.Problems, Problem{Commit: c.Hash.String(), Path: p, Key: key, Hash: hash, Error: err.Error()})
	}
	m, err := j.env.Git.ReadManifest(h, p)
	if err != nil {
		bad("", "", err)
		return nil
	}
	if j.opt.Remote {
		if err := store.Verify(ctx, j.env.Store, m.Layout, m.LayoutSize, j.opt.Full); err != nil {
			if errors.Is(err, store.ErrUnavailable) {
				return j.unavailable(err)
			}
			bad("(layout)", m.Layout.String(), err)
			return nil
		}
	}
	if handled, err := j.checkDataset(ctx, m, bad); handled || err != nil {
		j.gather(c, p, m)
		return err
	}
	lay, err := j.env.LayoutOf(ctx, m)
	if err != nil {
		if errors.Is(err, store.ErrUnavailable) {
			return j.unavailable(err)
		}
		bad("(layout)", m.Layout.String(), err)
		return nil
	}
	if err := checkLayoutAgrees(m, lay); err != nil {
		bad("(layout)", m.Layout.String(), err)
	} else if j.opt.Full {
		// Rebuild the file and check its digest: a manifest whose
		// chunks are all fine can still describe other bytes.
		if err := j.env.VerifyDigest(ctx, m, lay); err != nil {
			bad("(file)", m.Digest.String(), err)
		}
	}
	j.gather(c, p, m)
	return nil
}

// gather records m's chunks for verifyChunks.
func (j *job) gather(c *gitdb.Commit, p string, m *manifest.Manifest) {
	for _, ch := range m.Chunks {
		if _, ok := j.chunks[ch.ID]; !ok {
			j.chunks[ch.ID] = user{c.Hash.String(), p, ch.Key}
			j.sizes[ch.ID] = ch.Size
		}
	}
}

// checkDataset checks m when it is a dataset's manifest (handled): its
// layout blob is a dataset layout ("chunkvc-dataset 1", not a file's)
// whose member table agrees with the chunk lines, and the members give
// the manifest's dataset digest. The digest comes from IDs alone, so it
// is checked with or without Full; Full re-hashes the chunks themselves
// in verifyChunks.
func (j *job) checkDataset(ctx context.Context, m *manifest.Manifest, bad func(key, hash string, err error)) (handled bool, err error) {
	if j.env.Dataset == nil {
		return false, nil
	}
	digest, ok, err := j.env.Dataset(ctx, m)
	switch {
	case !ok:
		return false, nil
	case errors.Is(err, store.ErrUnavailable):
		return true, j.unavailable(err)
	case err != nil:
		bad("(layout)", m.Layout.String(), err)
	case digest != m.Digest:
		bad("(dataset)", m.Digest.String(), fmt.Errorf("its members give dataset digest %s, the manifest says %s", digest, m.Digest))
	}
	return true, nil
}

// verifyChunks checks every gathered chunk, in ID order, in the store
// (or, without Remote, the embedded one), repairing with Repair.
func (j *job) verifyChunks(ctx context.Context, prog progress.Counter) error {
	st := j.env.Store
	ids := make([]hashing.ID, 0, len(j.chunks))
	var total int64
	for id := range j.chunks {
		ids = append(ids, id)
		total += j.sizes[id]
	}
	sort.Slice(ids, func(a, b int) bool { return string(ids[a][:]) < string(ids[b][:]) })
	prog.Start("verify chunks", total)
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return err
		}
		size := j.sizes[id]
		err := store.Verify(ctx, st, id, size, j.opt.Full)
		if err != nil && errors.Is(err, store.ErrNotFound) && !j.opt.Remote && j.env.Local != st {
			err = store.Verify(ctx, j.env.Local, id, size, j.opt.Full)
		}
		if errors.Is(err, store.ErrUnavailable) {
			return j.unavailable(err)
		}
		if err != nil && j.opt.Repair {
			if rerr := j.repair(ctx, id); rerr == nil {
				j.res.Repaired++
				err = nil
			}
		}
		if err != nil {
			u := j.chunks[id]
			msg := err.Error()
			if errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrCorrupt) {
				msg = "missing from store " + st.String()
			}
			j.res.Problems = append(j.res.Problems, Problem{Commit: u.commit, Path: u.path, Key: u.key, Hash: id.String(), Error: msg})
		}
		j.res.Chunks++
		j.res.Bytes += size
		prog.Add(size)
	}
	prog.Done()
	return nil
}

// unavailable is fsck's error when the store cannot be reached: no chunk
// can be checked, and a problem per chunk would say nothing of them.
func (j *job) unavailable(err error) error {
	return fmt.Errorf("fsck: store %s cannot be reached, nothing checked there: %w", j.env.Store, err)
}

// checkLayoutAgrees confirms a layout rebuilds the file the manifest names:
// same size, and every chunk it uses is listed with that size.
func checkLayoutAgrees(m *manifest.Manifest, lay *manifest.Layout) error {
	if lay.Size != m.Size {
		return fmt.Errorf("layout covers %d bytes, manifest says %d", lay.Size, m.Size)
	}
	size := make(map[hashing.ID]int64, len(m.Chunks))
	for _, c := range m.Chunks {
		size[c.ID] = c.Size
	}
	for _, pc := range lay.Pieces {
		if !pc.Chunk {
			continue // inline bytes, or derived bytes checked at checkout
		}
		if n, ok := size[pc.ID]; !ok || n != pc.Len {
			return fmt.Errorf("layout uses chunk %s (%d bytes) that the manifest does not list with that size", pc.ID, pc.Len)
		}
	}
	return nil
}

// repair copies a verified id from the first of env.Copies that holds an
// intact one into the configured store, replacing a damaged copy.
func (j *job) repair(ctx context.Context, id hashing.ID) error {
	st := j.env.Store
	for _, s := range j.env.Copies {
		data, err := store.ReadAll(ctx, s, id)
		if err != nil {
			continue
		}
		if err := st.Delete(ctx, id); err != nil {
			return err
		}
		if err := store.Put(ctx, st, id, data); err != nil {
			return err
		}
		return store.Verify(ctx, st, id, int64(len(data)), true)
	}
	return fmt.Errorf("chunk %s: no other store holds an intact copy", id)
}
