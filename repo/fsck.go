package repo

import (
	"context"
	"fmt"
	"io"

	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/manifest"
	"github.com/chunkvc/chunkvc/repo/internal/fsck"
	"github.com/chunkvc/chunkvc/repo/internal/gitdb"
	"github.com/chunkvc/chunkvc/store"
)

// Problem is one thing fsck found wrong (fsck.Problem).
type Problem = fsck.Problem

// FsckResult reports a check (fsck.Result).
type FsckResult = fsck.Result

// FsckOptions configures Fsck (fsck.Options).
type FsckOptions = fsck.Options

// Fsck checks every manifest reachable from any ref: it decodes, its layout
// blob is stored and agrees with it, and every chunk is in the store with
// the right size (and, with Full, the right hash). Commits an expiry
// record of gc --expire names are counted, not checked.
func (r *Repo) Fsck(ctx context.Context, opt FsckOptions) (*FsckResult, error) {
	if !r.storeInfo.Trusted {
		return nil, r.untrustedError(r.storeInfo) // not a problem of the data: nothing was checked
	}
	if err := r.settlePatch(); err != nil {
		return nil, err
	}
	// Repair copies from any other readable store.
	var copies []store.Store
	for _, s := range append([]store.Store{r.read.Local}, r.read.Alternates...) {
		if s != r.Store {
			copies = append(copies, s)
		}
	}
	if r.read.Cache != nil {
		copies = append(copies, r.read.Cache)
	}
	// Versions gc --expire deleted on purpose are not problems.
	expiries, err := r.expiryIndex(ctx)
	if err != nil {
		return nil, err
	}
	env := fsck.Env{Git: shardsRead{r.git}, Store: r.Store, Local: r.read.Local, Copies: copies,
		LayoutOf: r.layoutOf, VerifyDigest: r.verifyDigest, Dataset: r.fsckDataset,
		Expired: func(c *gitdb.Commit) (bool, error) {
			rec, err := expiries.Find(c)
			return rec != nil, err
		}}
	return fsck.Run(ctx, env, opt)
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

// fsckDataset reads dataset manifest m's layout blob as a dataset's and
// checks its member table (dataset.Members.Check); other manifests are
// not its business.
func (r *Repo) fsckDataset(ctx context.Context, m *manifest.Manifest) (hashing.ID, bool, error) {
	if !IsDataset(m) {
		return hashing.ID{}, false, nil
	}
	ms, err := r.DatasetMembers(ctx, m)
	if err != nil {
		return hashing.ID{}, true, err
	}
	digest, err := ms.Check(m.Size)
	return digest, true, err
}

// shardsRead is the Git fsck reads: split manifests are decoded from their
// shards in Git, never from the manifest cache, so that a damaged shard is
// found.
type shardsRead struct{ *gitRepo }

func (g shardsRead) ReadManifest(h gitdb.Hash, p string) (*manifest.Manifest, error) {
	m, _, err := g.decodeManifestBlob(h, p, false)
	return m, err
}
