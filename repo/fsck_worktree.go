package repo

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"

	"github.com/chunkvc/chunkvc/formats/zarr"
	"github.com/chunkvc/chunkvc/hashing"
	"github.com/chunkvc/chunkvc/internal/progress"
	"github.com/chunkvc/chunkvc/repo/internal/dataset"
)

// WorktreeStatus is what fsck --worktree found of one file.
type WorktreeStatus string

const (
	WorktreeOK      WorktreeStatus = "ok"      // the bytes are the committed ones
	WorktreeDiffers WorktreeStatus = "differs" // other bytes than HEAD's manifest says
	WorktreeMissing WorktreeStatus = "missing" // not in the work tree
	WorktreeSkipped WorktreeStatus = "skipped" // partial (checkout --bbox): not whole by design
)

// WorktreeFile is one tracked file checked against HEAD.
type WorktreeFile struct {
	Path      string         `json:"path"`
	Status    WorktreeStatus `json:"status"`
	Committed string         `json:"committed"`        // HEAD's digest
	Digest    string         `json:"digest,omitempty"` // the work tree's, when read
}

// FsckWorktree re-hashes every file HEAD tracks in the work tree,
// whole, and compares it with the digest HEAD's manifest records: the
// stat cache and the seen cache are not consulted, so a file changed
// behind chunkvc's back with its times restored is still caught (tamper
// evidence in place). Files are listed in path order.
func (r *Repo) FsckWorktree(ctx context.Context, prog progress.Counter) ([]WorktreeFile, error) {
	if prog == nil {
		prog = progress.Noop{}
	}
	c, err := r.git.Resolve("")
	if err != nil {
		return nil, err
	}
	blobs, err := r.git.ManifestBlobs(c, ManifestDir)
	if err != nil {
		return nil, err
	}
	partial := r.loadPartial()
	out := make([]WorktreeFile, 0, len(blobs))
	for p, h := range blobs {
		m, _, err := r.manifestHeader(h, p)
		if err != nil {
			return nil, err
		}
		f := WorktreeFile{Path: p, Committed: m.Digest.String()}
		var got hashing.ID
		switch _, isPartial := partial.Entries[p]; {
		case isPartial:
			f.Status = WorktreeSkipped
		case m.Format == zarr.Format:
			got, err = r.rehashDataset(ctx, p, prog)
		default:
			got, err = r.rehashFile(ctx, p, prog)
		}
		switch {
		case f.Status != "":
		case errors.Is(err, fs.ErrNotExist):
			f.Status = WorktreeMissing
		case err != nil:
			return nil, fmt.Errorf("%s: %w", p, err)
		case got == m.Digest:
			f.Status, f.Digest = WorktreeOK, got.String()
		default:
			f.Status, f.Digest = WorktreeDiffers, got.String()
		}
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// rehashFile is the BLAKE3 digest of work-tree file p, read whole.
func (r *Repo) rehashFile(ctx context.Context, p string, prog progress.Counter) (hashing.ID, error) {
	f, err := os.Open(r.abs(p))
	if err != nil {
		return hashing.ID{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return hashing.ID{}, err
	}
	if !fi.Mode().IsRegular() {
		return hashing.ID{}, fmt.Errorf("not a regular file")
	}
	id, err := hashing.SumReaderAt(ctx, f, fi.Size())
	prog.Add(fi.Size())
	return id, err
}

// rehashDataset is the dataset digest of the store at p, every chunk
// read (no seen cache) and nothing stored.
func (r *Repo) rehashDataset(ctx context.Context, p string, prog progress.Counter) (hashing.ID, error) {
	plan, err := dataset.Build(r.abs(p))
	if err != nil {
		return hashing.ID{}, err
	}
	h := &datasetHash{dir: r.abs(p), plan: plan, up: &upload{progress: prog, dryRun: true}}
	ids, err := h.run(ctx)
	if err != nil {
		return hashing.ID{}, err
	}
	_, _, digest, err := plan.Encode(ids)
	return digest, err
}
