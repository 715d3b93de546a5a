package repo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/internal/progress"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
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

// FsckResult reports a check.
type FsckResult struct {
	Commits   int       `json:"commits"`
	Manifests int       `json:"manifests"`
	Chunks    int       `json:"chunks"`
	Bytes     int64     `json:"bytes"`
	Repaired  int       `json:"repaired"`
	Problems  []Problem `json:"problems"`
}

// FsckOptions configures Fsck.
type FsckOptions struct {
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

// Fsck checks every manifest reachable from any ref: it decodes, its layout
// blob is stored and agrees with it, and every chunk is in the store with
// the right size (and, with Full, the right hash).
func (r *Repo) Fsck(ctx context.Context, opt FsckOptions) (*FsckResult, error) {
	if !r.storeInfo.Trusted {
		return nil, r.untrustedError(r.storeInfo) // not a problem of the data: nothing was checked
	}
	if err := r.settlePatch(); err != nil {
		return nil, err
	}
	j := &fsckJob{r: r, opt: opt, res: &FsckResult{Problems: []Problem{}},
		chunks: map[hashing.ID]chunkUser{}, sizes: map[hashing.ID]int64{}}
	commits, err := r.git.Reachable()
	if err != nil {
		return nil, err
	}
	j.res.Commits = len(commits)
	seenBlob := map[gitdb.Hash]bool{}
	for _, c := range commits {
		if err := j.checkCommit(ctx, c, seenBlob); err != nil {
			return nil, err
		}
	}
	if err := j.verifyChunks(ctx, progress.OrNoop(opt.Progress)); err != nil {
		return nil, err
	}
	return j.res, nil
}

// fsckJob is one Fsck: checkCommit and checkManifest check the manifests
// and gather the chunks they use, verifyChunks checks those in the store.
type fsckJob struct {
	r      *Repo
	opt    FsckOptions
	res    *FsckResult
	chunks map[hashing.ID]chunkUser // each chunk's first user, for problems
	sizes  map[hashing.ID]int64
}

// chunkUser names where fsck met a chunk first.
type chunkUser struct{ commit, path, key string }

// checkCommit checks the manifests of commit c not seen before (by blob).
// Problems go into the result; the error is one that stops fsck.
func (j *fsckJob) checkCommit(ctx context.Context, c *gitdb.Commit, seenBlob map[gitdb.Hash]bool) error {
	blobs, err := j.r.git.manifestBlobs(c)
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
func (j *fsckJob) checkManifest(ctx context.Context, c *gitdb.Commit, p string, h gitdb.Hash) error {
	r := j.r
	bad := func(key, hash string, err error) {
		j.res.Problems = append(j.res.Problems, Problem{Commit: c.Hash.String(), Path: p, Key: key, Hash: hash, Error: err.Error()})
	}
	m, _, err := r.git.readManifestBlob(h, p)
	if err != nil {
		bad("", "", err)
		return nil
	}
	if j.opt.Remote {
		if err := store.Verify(ctx, r.Store, m.Layout, m.LayoutSize, j.opt.Full); err != nil {
			if errors.Is(err, store.ErrUnavailable) {
				return unavailable(r, err)
			}
			bad("(layout)", m.Layout.String(), err)
			return nil
		}
	}
	lay, err := r.layoutOf(ctx, m)
	if err != nil {
		if errors.Is(err, store.ErrUnavailable) {
			return unavailable(r, err)
		}
		bad("(layout)", m.Layout.String(), err)
		return nil
	}
	if err := checkLayoutAgrees(m, lay); err != nil {
		bad("(layout)", m.Layout.String(), err)
	} else if j.opt.Full {
		// Rebuild the file and check its digest: a manifest whose
		// chunks are all fine can still describe other bytes.
		if err := r.verifyDigest(ctx, m, lay); err != nil {
			bad("(file)", m.Digest.String(), err)
		}
	}
	for _, ch := range m.Chunks {
		if _, ok := j.chunks[ch.ID]; !ok {
			j.chunks[ch.ID] = chunkUser{c.Hash.String(), p, ch.Key}
			j.sizes[ch.ID] = ch.Size
		}
	}
	return nil
}

// verifyChunks checks every gathered chunk, in ID order, in the store
// (or, without Remote, the embedded one), repairing with Repair.
func (j *fsckJob) verifyChunks(ctx context.Context, prog progress.Counter) error {
	r := j.r
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
		err := store.Verify(ctx, r.Store, id, size, j.opt.Full)
		if err != nil && errors.Is(err, store.ErrNotFound) && !j.opt.Remote && r.read.Local != r.Store {
			err = store.Verify(ctx, r.read.Local, id, size, j.opt.Full)
		}
		if errors.Is(err, store.ErrUnavailable) {
			return unavailable(r, err)
		}
		if err != nil && j.opt.Repair {
			if rerr := r.repair(ctx, id); rerr == nil {
				j.res.Repaired++
				err = nil
			}
		}
		if err != nil {
			u := j.chunks[id]
			msg := err.Error()
			if errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrCorrupt) {
				msg = "missing from store " + r.Store.String()
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
func unavailable(r *Repo, err error) error {
	return fmt.Errorf("fsck: store %s cannot be reached, nothing checked there: %w", r.Store, err)
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

// repair copies a verified id from any other readable store into the
// configured store, replacing a damaged copy.
func (r *Repo) repair(ctx context.Context, id hashing.ID) error {
	var others []store.Store
	for _, s := range append([]store.Store{r.read.Local}, r.read.Alternates...) {
		if s != r.Store {
			others = append(others, s)
		}
	}
	if r.read.Cache != nil {
		others = append(others, r.read.Cache)
	}
	for _, s := range others {
		data, err := store.ReadAll(ctx, s, id)
		if err != nil {
			continue
		}
		if err := r.Store.Delete(ctx, id); err != nil {
			return err
		}
		if err := store.Put(ctx, r.Store, id, data); err != nil {
			return err
		}
		return store.Verify(ctx, r.Store, id, int64(len(data)), true)
	}
	return fmt.Errorf("chunk %s: no other store holds an intact copy", id)
}

// verifyDigest assembles m without writing it anywhere (derived pieces need
// a temp file) and compares the whole-file digest.
func (r *Repo) verifyDigest(ctx context.Context, m *manifest.Manifest, lay *manifest.Layout) error {
	if lay.HasDerived() {
		_, err := r.catVia(ctx, m, io.Discard)
		return err
	}
	_, digest, err := r.stream(ctx, m, lay, io.Discard, nil, nil, nil)
	if err != nil {
		return nil // a missing or corrupt chunk: reported with its key by the chunk check
	}
	if digest != m.Digest {
		return fmt.Errorf("%s: %w: its chunks assemble to %s, manifest says %s", m.Path, ErrIntegrity, digest, m.Digest)
	}
	return nil
}
